-- Serving replica runs quarantined (at ingest, or held after a dbt test) whose GPU-hours no staged run counts: their
-- file and line in raw.quarantine, their id, start and end as the file wrote them (raw.serving_replicas_extent; null
-- where blank or not a time). A run with a blank ended_at (a replica still up) is one. Such a run held GPUs for
-- hours no figure knows, in every month from its start to its end (any month, where a bound is unknown): the
-- month's other serving costs, shared by GPU-hours, are unknown there (int_model_months_costed), not shifted onto
-- the models whose runs were staged. A run that a staged row of the same replica (same_id) and start counts (a
-- later list naming it right) no longer leaves anything unknown.
-- A replicas file refused whole (line 0: a header lacking a contract column, not text...) held runs no one read:
-- one row with no id, start or end, so every month is unknown while it stands (a file retracted and a file holding
-- a retracted file's bytes are not runs: their rows were taken out on purpose).
with quarantined as (
    select
        extent.replica_id,
        extent.started_at,
        extent.ended_at,
        extent.source_file,
        extent.source_line,
        min(quarantine.rule) as rule
    from {{ source('raw', 'serving_replicas_extent') }} as extent
    inner join {{ source('raw', 'quarantine') }} as quarantine
        on quarantine.source = 'serving_replicas'
        and extent.source_file = quarantine.source_file
        and extent.file_sha256 = quarantine.file_sha256
        and extent.source_line = quarantine.line
    group by extent.replica_id, extent.started_at, extent.ended_at, extent.source_file, extent.source_line
),

refused_files as (
    select
        cast(null as {{ dbt.type_string() }}) as replica_id,
        cast(null as {{ dbt.type_timestamp() }}) as started_at,
        cast(null as {{ dbt.type_timestamp() }}) as ended_at,
        source_file,
        line as source_line,
        min(rule) as rule
    from {{ source('raw', 'quarantine') }}
    where source = 'serving_replicas' and line = 0 and rule <> 'retracted_content'
    group by source_file, line
)

select quarantined.*
from quarantined
where not exists (
    select 1
    from {{ ref('stg_serving__replicas') }} as staged
    where {{ same_id('staged.replica_id') }} = {{ same_id('quarantined.replica_id') }}
        and staged.started_at = quarantined.started_at
)

union all

select * from refused_files
