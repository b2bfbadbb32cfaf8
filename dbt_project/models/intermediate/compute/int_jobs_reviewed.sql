-- Each job's class in the plan-vs-actual review (R18), from the contract's plan_review rules of the batch's
-- contract version: the first rule that matches of termination category, run reason and phase; a failure_retry
-- run is avoidable rework when the run it restarts is; no match is planned_work.
with jobs as (
    select job_id, contract_version, termination_category, run_reason, phase, lineage_type, lineage_job_id
    from {{ ref('int_jobs_attributed') }}
),

rules as (
    select contract_version, enumeration, code, category as review_class
    from {{ ref('stg_contract__enumerations') }}
    where enumeration in ('review_termination_category', 'review_run_reason', 'review_phase')
),

own_class as (
    select
        jobs.*,
        by_termination.review_class as termination_class,
        by_reason.review_class as reason_class,
        by_phase.review_class as phase_class
    from jobs
    left join rules as by_termination
        on by_termination.enumeration = 'review_termination_category'
        and by_termination.code = jobs.termination_category
        and by_termination.contract_version = jobs.contract_version
    left join rules as by_reason
        on by_reason.enumeration = 'review_run_reason'
        and by_reason.code = jobs.run_reason
        and by_reason.contract_version = jobs.contract_version
    left join rules as by_phase
        on by_phase.enumeration = 'review_phase'
        and by_phase.code = jobs.phase
        and by_phase.contract_version = jobs.contract_version
),

base as (
    select
        own_class.*,
        coalesce(termination_class, reason_class, phase_class, 'planned_work') as base_class
    from own_class
)

select
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
    and base.lineage_job_id = restarted.job_id
