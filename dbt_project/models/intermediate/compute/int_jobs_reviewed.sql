-- Each job's class in the plan-vs-actual review (R18), from its own class (int_jobs_classed: the first rule of the
-- contract's plan_review that matches of termination category, run reason and phase; no match is planned_work).
-- A restart that carried no run reason is a failure_retry here (int_jobs_attributed's rerun_reason).
-- A failure_retry run is avoidable rework when the run it restarts is, at any depth: a retry of a retry of a
-- configuration error is avoidable rework too. A retry whose own termination category has no class (it completed,
-- or was cancelled) takes its class through the restart chain from the first run up the chain that has a class of
-- its own (its anchor): avoidable_rework when the anchor's is, else failure_retry's rule (unforeseeable_failure).
-- The anchor is found without a recursive CTE (Spark has none): each round moves a retry's pointer one restart up
-- until it reaches a run that is no chained retry, so `rounds` rounds resolve chains of up to `rounds` retries.
-- Each round reads the round before once (pointer doubling would read it twice, and Spark inlines a CTE into each
-- reference: 2^rounds copies); retry_chain_resolved says whether a chain was longer, and its test warns.
{%- set rounds = 64 %}
with base as (
    select job_key, job_id, lineage_job_key, termination_class, reason_class, phase_class, base_class, is_chained_retry
    from {{ ref('int_jobs_classed') }}
),

-- Each chained retry points at the run it restarts; a pointer at a run that is no chained retry (an anchor) stays.
pointers_0 as (
    select job_key, lineage_job_key as anchor_key
    from base
    where is_chained_retry
),
{%- for round in range(1, rounds + 1) %}

pointers_{{ round }} as (
    select
        pointers.job_key,
        coalesce(jumped.anchor_key, pointers.anchor_key) as anchor_key
    from pointers_{{ round - 1 }} as pointers
    left join pointers_0 as jumped on pointers.anchor_key = jumped.job_key
),
{%- endfor %}

anchors as (
    select pointers.job_key, anchor.base_class as anchor_class, not anchor.is_chained_retry as is_resolved
    from pointers_{{ rounds }} as pointers
    inner join base as anchor on pointers.anchor_key = anchor.job_key
)

select
    base.job_key,
    base.job_id,
    coalesce(
        base.termination_class,
        case when base.is_chained_retry and anchors.anchor_class = 'avoidable_rework' then 'avoidable_rework' end,
        base.reason_class,
        base.phase_class,
        'planned_work'
    ) as review_class,
    anchors.is_resolved as retry_chain_resolved
from base
left join anchors on base.job_key = anchors.job_key
