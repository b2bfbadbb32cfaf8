-- Each job's class in the plan-vs-actual review (R18), from the contract's plan_review rules of the batch's
-- contract version: the first rule that matches of termination category, run reason and phase; a failure_retry
-- run is avoidable rework when the run it restarts is; no match is planned_work.
with jobs as (
    select job_key, job_id, contract_version, termination_category, run_reason, phase, lineage_type, lineage_job_key
    from {{ ref('int_jobs_attributed') }}
),

own_class as (
    select
        jobs.*,
        by_termination.category as termination_class,
        by_reason.category as reason_class,
        by_phase.category as phase_class
    from jobs
    {{ join_contract_enumeration('by_termination', 'review_termination_category', 'jobs.contract_version',
                                 code='jobs.termination_category') }}
    {{ join_contract_enumeration('by_reason', 'review_run_reason', 'jobs.contract_version', code='jobs.run_reason') }}
    {{ join_contract_enumeration('by_phase', 'review_phase', 'jobs.contract_version', code='jobs.phase') }}
),

base as (
    select
        own_class.*,
        coalesce(termination_class, reason_class, phase_class, 'planned_work') as base_class
    from own_class
)

select
    base.job_key,
    base.job_id,
    coalesce(
        base.termination_class,
        case when base.run_reason = 'failure_retry' and restarted.base_class = 'avoidable_rework'
            then 'avoidable_rework' end,
        base.reason_class,
        base.phase_class,
        'planned_work'
    ) as review_class
from base
left join base as restarted
    on base.lineage_type = 'restart_of'
    and base.lineage_job_key = restarted.job_key
