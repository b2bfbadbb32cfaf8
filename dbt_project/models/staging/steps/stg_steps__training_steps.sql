with source as (
    select * from {{ source('raw', 'training_steps') }}
),

-- A step file shipped again: each step once; the newest file wins (a step discarded after the fact is restated).
newest as (
    {{ newest_delivery('source', ['job_id', 'step', 'started_at']) }}
),

renamed as (
    select
        batch_id,
        job_id,
        step as step_number,
        started_at,
        ended_at,
        {{ seconds_between('started_at', 'ended_at') }} as step_seconds,
        committed as is_committed,
        discarded_reason,
        samples,
        tokens,
        config_version,
        data_version,
        source_file,
        source_line
    from newest
)

select * from renamed
