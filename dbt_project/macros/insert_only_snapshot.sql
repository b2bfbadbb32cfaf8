{#-
    The body of an insert-only snapshot model (R16), materialized incremental with the append strategy.

    current  a CTE of the calling model: one row per key with the traced versions and the figures
    keys     the columns that name one snapshotted thing (e.g. ['batch_id'])
    traced   the version columns kept and compared (contract, config, data version)
    figures  the figure columns kept and compared
    appended figures added after versions were already written: a mapping column -> its value in every version
             written before the column existed (e.g. {'is_unpriced': 'false'}). Kept and compared like figures,
             but hashed only when they differ from that value, so that adding one writes no new version by itself.
    whole    figures kept as whole numbers in versions written before and as decimals now (step durations, once
             whole seconds, now to the millisecond): hashed as the whole number's text when the value is whole,
             so that the retyping writes no new version by itself (the model widens the stored column with
             widen_snapshot_columns).

    A run appends a row for a key only when its traced versions or figures differ from the key's latest snapshot
    (content_hash); earlier versions are never updated or deleted. Each appended row records the hash of every
    input file (sha256) of the run that produced it.
-#}
{% macro insert_only_snapshot(current, keys, traced, figures, appended={}, whole=[]) %}
{%- set parts = [] %}
{%- for column in traced + figures %}
    {%- set text = "cast(" ~ column ~ " as " ~ dbt.type_string() ~ ")" %}
    {%- if column in whole %}
        {%- set text = "case when " ~ column ~ " = floor(" ~ column ~ ") then cast(cast(" ~ column ~ " as bigint) as "
            ~ dbt.type_string() ~ ") else " ~ text ~ " end" %}
    {%- endif %}
    {%- do parts.append("coalesce(" ~ text ~ ", '-')") %}
    {%- do parts.append("'|'") %}
{%- endfor %}
{%- for column, unchanged in appended.items() %}
    {%- do parts.append("case when " ~ column ~ " = " ~ unchanged ~ " then '' else "
                        ~ dbt.concat(["coalesce(cast(" ~ column ~ " as " ~ dbt.type_string() ~ "), '-')", "'|'"])
                        ~ " end") %}
{%- endfor %}
{%- set key_list = keys | join(', ') %}
snapshot_inputs as (
    select {{ dbt.hash(ordered_listagg('file_sha256', "','", 'file_sha256')) }} as inputs_hash
    from {{ source('raw', 'ingested_files') }}
),

hashed as (
    select
        {{ current }}.*,
        {{ dbt.hash(dbt.concat(parts)) }} as content_hash
    from {{ current }}
),

{% if is_incremental() %}
latest as (
    select {{ key_list }}, snapshot_version, content_hash
    from (
        select
            {{ key_list }},
            snapshot_version,
            content_hash,
            row_number() over (partition by {{ key_list }} order by snapshot_version desc) as recency
        from {{ this }}
    ) as versions
    where recency = 1
),
{% else %}
latest as (
    select
        {%- for key in keys %}
        hashed.{{ key }},
        {%- endfor %}
        cast(0 as integer) as snapshot_version,
        hashed.content_hash
    from hashed
    where 1 = 0
),
{% endif %}

changed as (
    select
        hashed.*,
        cast(coalesce(latest.snapshot_version, 0) + 1 as integer) as snapshot_version
    from hashed
    left join latest
        on {% for key in keys %}hashed.{{ key }} = latest.{{ key }}{% if not loop.last %} and {% endif %}{% endfor %}
    where latest.content_hash is null or latest.content_hash <> hashed.content_hash
)

select
    {%- for key in keys %}
    changed.{{ key }},
    {%- endfor %}
    changed.snapshot_version,
    {%- for column in traced %}
    changed.{{ column }},
    {%- endfor %}
    snapshot_inputs.inputs_hash,
    changed.content_hash,
    {%- for column in figures + (appended | list) %}
    changed.{{ column }}{% if not loop.last %},{% endif %}
    {%- endfor %}
from changed
cross join snapshot_inputs
{% endmacro %}

{#- Pre-hook of an insert-only snapshot: the columns (a mapping name -> type) that versions written before stored as
    whole numbers (bigint) are widened to their type now, so that an appended decimal is kept, not rounded. A new
    table is built with the type already; only an incremental run on an older table alters it. -#}
{% macro widen_snapshot_columns(columns) %}
    {%- if execute and is_incremental() %}
        {%- for column in adapter.get_columns_in_relation(this) %}
            {%- if column.name in columns and column.is_integer() %}
                alter table {{ this }} alter column {{ column.name }} set data type {{ columns[column.name] }}
            {%- endif %}
        {%- endfor %}
    {%- endif %}
{% endmacro %}
