{{ config(materialized='incremental', incremental_strategy='append', on_schema_change='append_new_columns') }}

-- Insert-only cost snapshots per batch (R16). A run appends a new version of a batch only when its figures,
-- contract version or config/data versions differ from the batch's latest version; earlier versions are never
-- updated or deleted. Each version records the input files (sha256) of the run that produced it. The figures
-- are the compute bill's (fct_batch_compute) and the full cost's (fct_batch_costs); a figure added later appears
-- as a new column, null in the versions written before it (on_schema_change: append_new_columns).
{%- set figures = batch_cost_figures() %}
{%- set full_figures = batch_full_cost_figures() %}
{%- set traced = ['full_costs.contract_version', 'batches.config_version', 'batches.data_version'] %}
{%- set parts = [] %}
{%- for column in figures %}{% do traced.append('compute.' ~ column) %}{% endfor %}
{%- for column in full_figures %}{% do traced.append('full_costs.' ~ column) %}{% endfor %}
{%- for expression in traced %}
    {%- do parts.append("coalesce(cast(" ~ expression ~ " as " ~ dbt.type_string() ~ "), '-')") %}
    {%- do parts.append("'|'") %}
{%- endfor %}

with inputs as (
    select {{ dbt.hash(dbt.listagg('file_sha256', "','", 'order by file_sha256')) }} as inputs_hash
    from {{ source('raw', 'ingested_files') }}
),

current_figures as (
    select
        full_costs.batch_id,
        full_costs.contract_version,
        batches.config_version,
        batches.data_version,
        {%- for column in figures %}
        compute.{{ column }},
        {%- endfor %}
        {%- for column in full_figures %}
        full_costs.{{ column }},
        {%- endfor %}
        {{ dbt.hash(dbt.concat(parts)) }} as content_hash
    from {{ ref('fct_batch_costs') }} as full_costs
    left join {{ ref('fct_batch_compute') }} as compute on full_costs.batch_id = compute.batch_id
    left join {{ ref('dim_batches') }} as batches on full_costs.batch_id = batches.batch_id
),

{% if is_incremental() %}
latest as (
    select batch_id, snapshot_version, content_hash
    from (
        select
            batch_id,
            snapshot_version,
            content_hash,
            row_number() over (partition by batch_id order by snapshot_version desc) as recency
        from {{ this }}
    ) as versions
    where recency = 1
),
{% else %}
latest as (
    select
        cast(null as {{ dbt.type_string() }}) as batch_id,
        cast(0 as integer) as snapshot_version,
        cast(null as {{ dbt.type_string() }}) as content_hash
    where 1 = 0
),
{% endif %}

changed as (
    select
        current_figures.*,
        cast(coalesce(latest.snapshot_version, 0) + 1 as integer) as snapshot_version
    from current_figures
    left join latest on current_figures.batch_id = latest.batch_id
    where latest.batch_id is null or latest.content_hash <> current_figures.content_hash
)

select
    changed.batch_id,
    changed.snapshot_version,
    changed.contract_version,
    changed.config_version,
    changed.data_version,
    inputs.inputs_hash,
    changed.content_hash,
    {%- for column in figures + full_figures %}
    changed.{{ column }}{% if not loop.last %},{% endif %}
    {%- endfor %}
from changed
cross join inputs
