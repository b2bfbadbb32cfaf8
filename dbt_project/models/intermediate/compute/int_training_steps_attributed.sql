-- Training steps resolved to a registered batch and to the phase of the job that ran them (R7).
-- The contract's rule: a step is counted into the model when it was committed and not discarded.
-- A step run again in its run (a requeued Slurm job keeps its JobID and restarts from its last checkpoint, re-running
-- the steps after it) is counted once, as its last copy: each earlier copy, committed, wrote parameters the restart
-- threw away, the contract's discard reason rollback (a reason of its own stays), its work lost, never progress.
with steps as (
    select * from {{ ref('stg_steps__training_steps') }}
),

batches as (
    select batch_id from {{ ref('stg_registry__batches') }}
),

-- A run: a Slurm job's incarnations (sacct --duplicates lists each, a job of its own) from one with Restarts 0 (or
-- unknown: a JobID reused after a controller reset starts a new run) up to the next such one, each requeued
-- incarnation (Restarts > 0) continuing the one before it; any other job is a run of its own (a Kubernetes job's
-- restarts are inside its job).
jobs as (
    select
        job_key,
        phase,
        case when scheduler = 'slurm'
            then {{ dbt.concat([
                "coalesce(cluster, '')", "'/'", "job_id", "'#'",
                "cast(sum(case when restarts > 0 then 0 else 1 end) over (partition by cluster, job_id"
                ~ " order by submit_at, job_key rows between unbounded preceding and current row) as "
                ~ dbt.type_string() ~ ")"
            ]) }}
            else job_key
        end as run_key
    from {{ ref('int_jobs_attributed') }}
),

job_aliases as (
    select * from {{ ref('int_job_aliases_resolved') }}
),

attributed as (
    select
        coalesce(batches.batch_id, 'unattributed') as batch_id,
        coalesce(jobs.phase, 'unlabelled') as phase,
        job_aliases.job_key,
        -- a step whose job is not in the scheduler export: its job id is its run
        coalesce(jobs.run_key, steps.job_id) as run_key,
        steps.job_id,
        steps.step_number,
        steps.started_at,
        steps.ended_at,
        steps.step_seconds,
        steps.is_committed,
        steps.discarded_reason,
        steps.samples,
        steps.tokens,
        steps.config_version,
        steps.data_version
    from steps
    left join batches on {{ same_id('steps.batch_id') }} = {{ same_id('batches.batch_id') }}
    left join job_aliases
        on steps.job_id = job_aliases.alias_job_id
        and {{ held_by_alias('job_aliases', 'steps.started_at') }}
    left join jobs on job_aliases.job_key = jobs.job_key
),

redone as (
    select
        *,
        lead(started_at) over (
            partition by batch_id, run_key, step_number order by started_at
        ) as redone_at
    from attributed
),

discarded as (
    select
        *,
        case when redone_at is not null and is_committed
            then coalesce(discarded_reason, 'rollback')
            else discarded_reason
        end as step_discarded_reason
    from redone
)

select
    batch_id,
    phase,
    job_key,
    job_id,
    step_number,
    started_at,
    ended_at,
    step_seconds,
    is_committed,
    step_discarded_reason as discarded_reason,
    is_committed and step_discarded_reason is null as is_counted,
    redone_at,
    samples,
    tokens,
    config_version,
    data_version
from discarded
