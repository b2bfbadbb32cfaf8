-- A replica is its id compared case-folded (same_id): a re-export spelling R-L1 as r-l1 names the same replica, and
-- its runs supersede the older spelling's as any newer list's do (both counted doubled the model's GPU-hours).
with source as (
    select *, {{ same_id('replica_id') }} as replica_match from {{ source('raw', 'serving_replicas') }}
),

-- A replica's run is its id and start (replica_key): a replica id runs again (next month's list names it with its new
-- start) and keeps each run; a list delivered again (other bytes) gives each run once, from the newest file.
newest as (
    {{ newest_delivery('source', ['replica_match', 'started_at']) }}
),

-- A later list may correct a run's start or end (the same replica, the same run, a start a few minutes off): a run
-- that a newer delivery's run of the same replica overlaps in time is superseded by it, as the newest file says
-- what a ledger cell is (newest_file_lines), so no GPU-hour is counted twice. Newer: its file arrived later (files
-- of one load, or without an arrival: the last by path), as newest_delivery ranks deliveries. Runs that do not
-- overlap are runs of their own.
delivered as (
    select
        newest.*,
        coalesce(arrivals.arrived_at, {{ dbt.cast("'1970-01-01 00:00:00'", dbt.type_timestamp()) }}) as arrived_at
    from newest
    left join {{ file_arrivals() }} as arrivals on newest.file_sha256 = arrivals.arrived_sha256
),

superseded as (
    select distinct
        older.replica_match,
        older.started_at
    from delivered as older
    inner join delivered as newer
        on older.replica_match = newer.replica_match
        and (
            newer.arrived_at > older.arrived_at
            or (newer.arrived_at = older.arrived_at and newer.source_file > older.source_file)
        )
        and older.started_at < newer.ended_at
        and newer.started_at < older.ended_at
),

runs as (
    select newest.*
    from newest
    left join superseded
        on newest.replica_match = superseded.replica_match
        and newest.started_at = superseded.started_at
    where superseded.replica_match is null
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
