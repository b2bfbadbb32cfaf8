with source as (
    select * from {{ source('raw', 'serving_replicas') }}
),

-- A reference file delivered again (a whole new export, other bytes): each replica once, from the newest file.
newest as (
    {{ newest_delivery('source', ['replica_id']) }}
),

renamed as (
    select
        replica_id,
        model,
        gpus,
        started_at,
        ended_at,
        gpu_hour_price,
        source_file,
        source_line
    from newest
)

select * from renamed
