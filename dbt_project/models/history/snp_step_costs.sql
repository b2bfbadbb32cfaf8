{{ config(materialized='incremental', incremental_strategy='append', on_schema_change='append_new_columns',
          pre_hook="{{ widen_snapshot_columns({'step_seconds': 'decimal(18, 3)'}) }}") }}

-- Insert-only cost snapshots per training step (R16): each step's duration, whether it counted into the model and
-- its cost - the cost of its job's allocation per second x the step's seconds (setup and tail stay with the job).
-- A late step record, a restated bill or a new contract version that changes a step's figures appends a new
-- version of that step; earlier versions are never rewritten. Durations were whole seconds before they were kept to
-- the millisecond: a whole one hashes as before (insert_only_snapshot's whole), and an older table's column is
-- widened to decimal before a version is appended.
with steps as (
    select * from {{ ref('int_training_steps_attributed') }}
),

jobs as (
    select
        job_key,
        contract_version,
        compute_cost,
        {{ seconds_between('start_at', 'end_at') }} as span_seconds
    from {{ ref('int_jobs_costed') }}
    where start_at is not null and end_at is not null
),

current_steps as (
    select
        steps.batch_id,
        steps.job_id,
        steps.step_number,
        steps.started_at,
        coalesce(jobs.contract_version, {{ latest_contract_version() }}) as contract_version,
        steps.config_version,
        steps.data_version,
        steps.phase,
        steps.step_seconds,
        steps.is_counted,
        steps.discarded_reason,
        case when jobs.span_seconds > 0
            then {{ money_share('jobs.compute_cost', 'steps.step_seconds', 'jobs.span_seconds', 4) }}
        end as step_cost
    from steps
    left join jobs on steps.job_key = jobs.job_key
),

{{ insert_only_snapshot('current_steps', ['batch_id', 'job_id', 'step_number', 'started_at'],
                        ['contract_version', 'config_version', 'data_version'],
                        ['phase', 'step_seconds', 'is_counted', 'discarded_reason', 'step_cost'],
                        whole=['step_seconds']) }}
