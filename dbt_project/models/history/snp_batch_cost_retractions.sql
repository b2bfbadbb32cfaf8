{{ config(materialized='incremental', incremental_strategy='append') }}

-- Why a cost-history version was written: the retractions (cost-pipeline retract) it carries (R16). Insert-only,
-- like the snapshots: a retraction is named once, on the night its rows left raw, by the batch versions written
-- that night (the versions whose inputs_hash is this run's) of the batches the file fed (raw.retraction_batches,
-- read when it was retracted), joined to snp_batch_costs by batch and version. A retraction from a source whose
-- rows are not per batch (no row there) is named by every version of that night. A retraction that changed no
-- batch's figures gets one row with no batch. Earlier versions are never touched.
with run_inputs as (
    select {{ dbt.hash(ordered_listagg('file_sha256', "','", 'file_sha256')) }} as inputs_hash
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

fed as (
    select
        source,
        source_file,
        file_sha256,
        batch_id
    from {{ source('raw', 'retraction_batches') }}
),

versions as (
    select
        snapshots.batch_id,
        snapshots.snapshot_version
    from {{ ref('snp_batch_costs') }} as snapshots
    inner join run_inputs on snapshots.inputs_hash = run_inputs.inputs_hash
    where snapshots.snapshot_version > 1
),

traced as (
    -- the retractions whose file's batches were read when it was retracted
    select distinct
        source,
        source_file,
        file_sha256
    from fed
),

caused as (
    -- a traced retraction: the night's versions of the batches the file fed; else every version of the night
    select
        retractions.source,
        retractions.source_file,
        retractions.file_sha256,
        versions.batch_id,
        versions.snapshot_version
    from retractions
    cross join versions
    left join traced
        on
            retractions.source = traced.source
            and retractions.source_file = traced.source_file
            and retractions.file_sha256 = traced.file_sha256
    left join fed
        on
            retractions.source = fed.source
            and retractions.source_file = fed.source_file
            and retractions.file_sha256 = fed.file_sha256
            and versions.batch_id = fed.batch_id
    where traced.source is null or fed.batch_id is not null
)

select
    caused.batch_id,
    caused.snapshot_version,
    retractions.source,
    retractions.source_file,
    retractions.file_sha256,
    retractions.rows_retracted,
    retractions.reason,
    retractions.retracted_by,
    retractions.retracted_at
from retractions
left join caused
    on
        retractions.source = caused.source
        and retractions.source_file = caused.source_file
        and retractions.file_sha256 = caused.file_sha256
