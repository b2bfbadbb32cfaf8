with source as (
    select * from {{ source('raw', 'serving_replicas') }}
),

-- A replica's run is its id and start (replica_key): a replica id runs again (next month's list names it with its new
-- start) and keeps each run; a list delivered again (other bytes) gives each run once, from the newest file.
newest as (
    {{ newest_delivery('source', ['replica_id', 'started_at']) }}
),

-- A later list may correct a run's start or end (the same replica, the same run, a start a few minutes off): a run
-- that a newer file's run of the same replica overlaps in time is superseded by it, as the newest file says what a
-- ledger cell is (newest_file_lines), so no GPU-hour is counted twice. Runs that do not overlap are runs of their own.
superseded as (
    select distinct
        older.replica_id,
        older.started_at
    from newest as older
    inner join newest as newer
        on older.replica_id = newer.replica_id
        and older.source_file < newer.source_file
        and older.started_at < newer.ended_at
        and newer.started_at < older.ended_at
),

runs as (
    select newest.*
    from newest
    left join superseded
        on newest.replica_id = superseded.replica_id
        and newest.started_at = superseded.started_at
    where superseded.replica_id is null
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
    from runs
)

select * from renamed
