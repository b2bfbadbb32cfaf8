with source as (
    select * from {{ source('raw', 'serving_replicas') }}
),

-- A replica's run is its id and start (replica_key): a replica id runs again (next month's list names it with its new
-- start) and keeps each run; a list delivered again (other bytes) gives each run once, from the newest file.
newest as (
    {{ newest_delivery('source', ['replica_id', 'started_at']) }}
),

renamed as (
    select
        {{ dbt.concat(['replica_id', "'@'", dbt.cast('started_at', dbt.type_string())]) }} as replica_key,
        replica_id,
        {{ model_name('model') }} as model,
        gpus,
        started_at,
        ended_at,
        gpu_hour_price,
        source_file,
        source_line
    from newest
)

select * from renamed
