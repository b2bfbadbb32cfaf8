-- Training steps resolved to a registered batch and to the phase of the job that ran them (R7).
-- The contract's rule: a step is counted into the model when it was committed and not discarded.
with steps as (
    select * from {{ ref('stg_steps__training_steps') }}
),

batches as (
    select batch_id from {{ ref('stg_registry__batches') }}
),

jobs as (
    select job_key, phase from {{ ref('int_jobs_attributed') }}
),

job_aliases as (
    select * from {{ ref('int_job_aliases_resolved') }}
)

select
    coalesce(batches.batch_id, 'unattributed') as batch_id,
    coalesce(jobs.phase, 'unlabelled') as phase,
    job_aliases.job_key,
    steps.job_id,
    steps.step_number,
    steps.started_at,
    steps.ended_at,
    steps.step_seconds,
    steps.is_committed,
    steps.discarded_reason,
    steps.is_committed and steps.discarded_reason is null as is_counted,
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
