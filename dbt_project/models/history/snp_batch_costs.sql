{{ config(materialized='incremental', incremental_strategy='append', on_schema_change='append_new_columns',
          pre_hook="{{ widen_snapshot_columns({'step_seconds_max': 'decimal(18, 3)'}) }}") }}

-- Insert-only cost snapshots per batch (R16). A run appends a new version of a batch only when its figures,
-- contract version or config/data versions differ from the batch's latest version; earlier versions are never
-- updated or deleted. Each version records the input files (sha256) of the run that produced it. The figures
-- are the compute bill's (fct_batch_compute) and the full cost's (fct_batch_costs); a figure added later appears
-- as a new column, null in the versions written before it (on_schema_change: append_new_columns); one added after
-- versions were written (is_unpriced, unpriced_gpu_hours) is hashed only when it differs from its value in them.
-- step_seconds_max was whole seconds before it was kept to the millisecond: a whole one hashes as before, and an
-- older table's column is widened to decimal before a version is appended.
{%- set figures = batch_cost_figures() %}
{%- set full_figures = batch_full_cost_figures() %}
{%- set appended = batch_appended_cost_figures() %}

with current_figures as (
    select
        full_costs.batch_id,
        full_costs.contract_version,
        batches.config_version,
        batches.data_version,
        {%- for column in figures %}
        compute.{{ column }},
        {%- endfor %}
        {%- for column in full_figures + (appended | list) %}
        full_costs.{{ column }}{% if not loop.last %},{% endif %}
        {%- endfor %}
    from {{ ref('fct_batch_costs') }} as full_costs
    left join {{ ref('fct_batch_compute') }} as compute on full_costs.batch_id = compute.batch_id
    left join {{ ref('dim_batches') }} as batches on full_costs.batch_id = batches.batch_id
),

{{ insert_only_snapshot('current_figures', ['batch_id'], ['contract_version', 'config_version', 'data_version'],
                        figures + full_figures, appended, whole=['step_seconds_max']) }}
