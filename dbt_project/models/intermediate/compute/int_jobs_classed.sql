-- Each job's own class in the plan-vs-actual review (R18), before restart chains: the contract's plan_review
-- rules of the batch's contract version by termination category, run reason and phase (each null where no rule
-- matches; no match at all is planned_work), and whether the job is a chained retry (a failure_retry restart whose
-- termination has no class). int_jobs_reviewed follows the chains. A table of its own, so that the chain's rounds
-- read this table: Spark inlines a CTE into each reference, and 65 copies of these joins took 70 s to plan.
with jobs as (
    select
        job_key, job_id, contract_version, termination_category, phase, lineage_type, lineage_job_key,
        coalesce(rerun_reason, run_reason) as run_reason
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
        coalesce(termination_class, reason_class, phase_class, 'planned_work') as base_class,
        termination_class is null and run_reason = 'failure_retry' and lineage_type = 'restart_of'
            and lineage_job_key is not null as is_chained_retry
    from own_class
)

select
    job_key, job_id, lineage_job_key, run_reason, termination_class, reason_class, phase_class, base_class,
    is_chained_retry
from base
