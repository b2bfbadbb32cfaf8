{#- One row per (key, host) from a Slurm hostlist column (`node-[01-03,07],gpu-a`): each comma-separated item
    outside brackets, and each number of a bracketed range, zero-padded to the width of its lower bound. One
    bracket group per item (Slurm's compressed form for a single dimension); an item with none is one host. A range
    may have a step (`1-99:2`, every second number: how sacct writes a pending array's evenly spaced tasks; hostlists
    have none). -#}
{% macro expand_hostlist(relation, key_columns, hostlist_column) %}
    {{ return(adapter.dispatch('expand_hostlist')(relation, key_columns, hostlist_column)) }}
{% endmacro %}

{% macro default__expand_hostlist(relation, key_columns, hostlist_column) %}
    {{ exceptions.raise_compiler_error('expand_hostlist has no implementation for ' ~ target.type) }}
{% endmacro %}

{% macro duckdb__expand_hostlist(relation, key_columns, hostlist_column) %}
    with items as (
        select
            {{ key_columns | join(', ') }},
            unnest(regexp_extract_all({{ hostlist_column }}, '[^,\[]+(?:\[[^\]]*\][^,\[]*)?')) as item
        from {{ relation }}
        where {{ hostlist_column }} is not null
    ),

    ranges as (
        select
            {{ key_columns | join(', ') }},
            item,
            regexp_extract(item, '^([^\[]*)\[', 1) as prefix,
            regexp_extract(item, '\](.*)$', 1) as suffix,
            unnest(
                case when item like '%[%' then string_split(regexp_extract(item, '\[([^\]]*)\]', 1), ',')
                    else [null] end
            ) as bounds
        from items
    ),

    numbered as (
        select
            {{ key_columns | join(', ') }},
            item,
            prefix,
            suffix,
            split_part(bounds, '-', 1) as low,
            unnest(generate_series(
                cast(split_part(bounds, '-', 1) as bigint),
                cast(coalesce(nullif(split_part(split_part(bounds, '-', 2), ':', 1), ''), split_part(bounds, '-', 1))
                    as bigint),
                cast(coalesce(nullif(split_part(bounds, ':', 2), ''), '1') as bigint)
            )) as number
        from ranges
        where bounds is not null
    )

    select {{ key_columns | join(', ') }}, trim(item) as hostname from ranges where bounds is null
    union all
    select
        {{ key_columns | join(', ') }},
        trim(prefix || lpad(
            cast(number as varchar), cast(greatest(length(low), length(cast(number as varchar))) as integer), '0'
        ) || suffix) as hostname
    from numbered
{% endmacro %}

{% macro spark__expand_hostlist(relation, key_columns, hostlist_column) %}
    with items as (
        select
            {{ key_columns | join(', ') }},
            explode(regexp_extract_all({{ hostlist_column }}, '([^,\\[]+(\\[[^\\]]*\\][^,\\[]*)?)', 1)) as item
        from {{ relation }}
        where {{ hostlist_column }} is not null
    ),

    ranges as (
        select
            {{ key_columns | join(', ') }},
            item,
            regexp_extract(item, '^([^\\[]*)\\[', 1) as prefix,
            regexp_extract(item, '\\](.*)$', 1) as suffix,
            explode(
                case when item like '%[%' then split(regexp_extract(item, '\\[([^\\]]*)\\]', 1), ',')
                    else array(cast(null as string)) end
            ) as bounds
        from items
    ),

    numbered as (
        select
            {{ key_columns | join(', ') }},
            item,
            prefix,
            suffix,
            split_part(bounds, '-', 1) as low,
            -- Spark's sequence counts down a descending range (n[5-3]), or refuses it with a step; DuckDB's
            -- generate_series gives none.
            explode(filter(
                sequence(low_number, greatest(low_number, high_number), step_number), n -> low_number <= high_number
            )) as number
        from (
            select
                ranges.*,
                cast(split_part(bounds, '-', 1) as bigint) as low_number,
                cast(coalesce(nullif(split_part(split_part(bounds, '-', 2), ':', 1), ''), split_part(bounds, '-', 1))
                    as bigint) as high_number,
                cast(coalesce(nullif(split_part(bounds, ':', 2), ''), '1') as bigint) as step_number
            from ranges
            where bounds is not null
        ) as bounded
    )

    select {{ key_columns | join(', ') }}, trim(item) as hostname from ranges where bounds is null
    union all
    select
        {{ key_columns | join(', ') }},
        trim(concat(prefix, lpad(
            cast(number as string), greatest(length(low), length(cast(number as string))), '0'
        ), suffix)) as hostname
    from numbered
{% endmacro %}
