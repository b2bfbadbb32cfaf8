{#- One row per record, however many landing files delivered it (R16). Exports overlap: a job running in one
    night's sacct export ends in the next, a request log or a step file is shipped again under another name, a
    month-to-date bill or time report repeats every earlier line. raw keeps every delivery; staging reads one. -#}

{#- Records with a natural key: `key` lists it; `prefer` (SQL, best first) ranks the deliveries before the newest
    file and line win. `relation` is a CTE name or a parenthesised query. -#}
{% macro newest_delivery(relation, key, prefer=none) %}
    select *
    from (
        select
            candidates.*,
            row_number() over (
                partition by {{ key | join(', ') }}
                order by {% if prefer %}{{ prefer }}, {% endif %}source_file desc, source_line desc
            ) as delivery_rank
        from {{ relation }} as candidates
    ) as deliveries
    where delivery_rank = 1
{% endmacro %}

{#- Lines without a record id (FOCUS charges, Harvest entries) from `source_relation` (a raw table): a line whose
    columns all equal a line of another file is the same line delivered again. Within one file a repeated line is
    a charge or an entry of its own, so the n-th copy in one file matches only the n-th copy in another
    (copy_number); the newest file's copy is kept. Every raw column is compared but the line's place (file, line,
    file hash) and `ignore`: annotations a later export may fill in or change on the same line (an invoice id,
    backfilled tags, a person's current roles), whose newest value is the one kept. A column added to the raw
    table later is compared without an edit here. -#}
{% macro identical_lines_once(source_relation, ignore=[]) %}
    {%- set columns = [] -%}
    {%- if execute -%}
        {%- for column in adapter.get_columns_in_relation(source_relation) -%}
            {%- if column.name not in ['source_file', 'source_line', 'file_sha256'] + ignore -%}
                {%- do columns.append(adapter.quote(column.name)) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if not columns -%}
            {{ exceptions.raise_compiler_error('identical_lines_once: ' ~ source_relation ~ ' has no columns') }}
        {%- endif -%}
    {%- else -%}
        {%- do columns.append('source_line') -%}
    {%- endif -%}
    {%- set numbered -%}
    (
        select
            lines.*,
            row_number() over (
                partition by {{ columns | join(', ') }}, source_file order by source_line
            ) as copy_number
        from {{ source_relation }} as lines
    )
    {%- endset %}
    {{ newest_delivery(numbered, columns + ['copy_number']) }}
{% endmacro %}
