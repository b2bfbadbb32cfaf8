{{ config(materialized='incremental', incremental_strategy='append') }}

-- Why a cost-history version was written: the retractions (cost-pipeline retract) it carries (R16). Insert-only,
-- like the snapshots: a retraction is named once, on the night its rows left raw, by every batch version written
-- that night (the versions whose inputs_hash is this run's), joined to snp_batch_costs by batch and version. A
-- retraction that changed no batch's figures gets one row with no batch. Earlier versions are never touched.
with run_inputs as (
    select {{ dbt.hash(dbt.listagg('file_sha256', "','", 'order by file_sha256')) }} as inputs_hash
    from {{ source('raw', 'ingested_files') }}
),

retractions as (
    select
        retracted.source,
        retracted.source_file,
        retracted.file_sha256,
        retracted.rows_retracted,
        retracted.reason,
        retracted.retracted_by,
        retracted.retracted_at
    from {{ source('raw', 'retractions') }} as retracted
    {%- if is_incremental() %}
    where not exists (
        select 1
        from {{ this }} as named
        where
            named.source = retracted.source
            and named.source_file = retracted.source_file
            and named.file_sha256 = retracted.file_sha256
    )
    {%- endif %}
),

versions as (
    select
        snapshots.batch_id,
        snapshots.snapshot_version
    from {{ ref('snp_batch_costs') }} as snapshots
    inner join run_inputs on snapshots.inputs_hash = run_inputs.inputs_hash
    where snapshots.snapshot_version > 1
)

select
    versions.batch_id,
    versions.snapshot_version,
    retractions.source,
    retractions.source_file,
    retractions.file_sha256,
    retractions.rows_retracted,
    retractions.reason,
    retractions.retracted_by,
    retractions.retracted_at
from retractions
left join versions on 1 = 1
