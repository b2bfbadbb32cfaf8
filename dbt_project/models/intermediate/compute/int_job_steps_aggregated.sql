-- One row per scheduler job with step records (R10): how many steps it ran, when the first began and when the last
-- ended. Waiting reads setup and tail from it; the utilization tiers read the hang after the last step.
with steps as (
    select * from {{ ref('int_training_steps_attributed') }}
),

job_aliases as (
    select * from {{ ref('int_job_aliases_resolved') }}
)

select
    job_aliases.job_key,
    count(*) as steps_run,
    min(steps.started_at) as first_step_at,
    max(steps.ended_at) as last_step_end_at
from steps
inner join job_aliases
    on steps.job_id = job_aliases.alias_job_id
    and {{ held_by_alias('job_aliases', 'steps.started_at') }}
group by job_aliases.job_key
