-- Every snapshot version of every batch's figures (R16), oldest first, with the columns that changed since the
-- version before. fct_batch_compute and fct_batch_costs show the latest figures; this mart shows how they got there.
-- A figure appended to the snapshot later (batch_appended_cost_figures) is null in the versions written before it,
-- where it held its first value (not unpriced, 0 unpriced GPU-hours, 0 running jobs): that is not counted as a
-- change. The measured people were not known there (-1 in batch_appended_cost_figures): null, and the first version
-- with them a change.
{%- set appended = batch_appended_cost_figures() %}
{%- set figures = batch_cost_figures() + batch_full_cost_figures() + (appended | list) %}
{%- set compared = ['contract_version', 'config_version', 'data_version'] + figures %}

with snapshots as (
    select * from {{ ref('snp_batch_costs') }}
),

pairs as (
    select
        current_version.batch_id,
        current_version.snapshot_version,
        {%- for column in compared %}
        {%- if column in appended %}
        {#- null in a version written before the column was kept: it held the column's first value then #}
        coalesce(current_version.{{ column }}, {{ appended[column] }}) as current_{{ loop.index }},
        coalesce(previous_version.{{ column }}, {{ appended[column] }}) as previous_{{ loop.index }}
        {%- else %}
        current_version.{{ column }} as current_{{ loop.index }},
        previous_version.{{ column }} as previous_{{ loop.index }}
        {%- endif %}{% if not loop.last %},{% endif %}
        {%- endfor %}
    from snapshots as current_version
    inner join snapshots as previous_version
        on current_version.batch_id = previous_version.batch_id
        and current_version.snapshot_version = previous_version.snapshot_version + 1
),

changes as (
    {%- for column in compared %}
    select batch_id, snapshot_version, '{{ column }}' as column_name, {{ loop.index }} as column_order
    from pairs
    where current_{{ loop.index }} is distinct from previous_{{ loop.index }}
    {% if not loop.last %}union all{% endif %}
    {%- endfor %}
),

change_lists as (
    select
        batch_id,
        snapshot_version,
        {{ ordered_listagg('column_name', "', '", 'column_order') }} as changed_columns
    from changes
    group by batch_id, snapshot_version
)

select
    snapshots.batch_id,
    snapshots.snapshot_version,
    snapshots.snapshot_version = max(snapshots.snapshot_version) over (partition by snapshots.batch_id)
        as is_latest,
    snapshots.contract_version,
    snapshots.config_version,
    snapshots.data_version,
    snapshots.inputs_hash,
    snapshots.content_hash,
    {%- for column in figures %}
    snapshots.{{ column }},
    {%- endfor %}
    case when snapshots.snapshot_version = 1 then 'first snapshot' else change_lists.changed_columns end
        as changed_columns,
    {{ reporting_currency() }} as currency
from snapshots
left join change_lists
    on snapshots.batch_id = change_lists.batch_id and snapshots.snapshot_version = change_lists.snapshot_version
