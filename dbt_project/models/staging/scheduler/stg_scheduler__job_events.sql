with source as (
    select * from {{ source('raw', 'scheduler_events') }}
),

-- An event stream shipped again: each event (cluster, job, kind, time) once, from the newest file.
newest as (
    {{ newest_delivery('source', ['cluster', 'job_id', 'event', adapter.quote('at')]) }}
),

renamed as (
    select
        -- Blank when the stream names no cluster (one cluster's export): '' so that it keys and partitions as one.
        coalesce(cluster, '') as cluster,
        job_id,
        event as event_type,
        {{ adapter.quote("at") }} as event_at,
        gpus_requested,
        gpus_allocated,
        gpu_instance_profile,
        time_limit_s as time_limit_seconds,
        state,
        batch_id,
        phase,
        run_reason,
        restart_of,
        continues,
        end_reason,
        source_file,
        source_line
    from newest
)

select * from renamed
