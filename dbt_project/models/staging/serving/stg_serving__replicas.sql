with source as (
    select * from {{ source('raw', 'serving_replicas') }}
),

renamed as (
    select
        replica_id,
        model,
        gpus,
        started_at,
        ended_at,
        gpu_hour_price
    from source
)

select * from renamed
