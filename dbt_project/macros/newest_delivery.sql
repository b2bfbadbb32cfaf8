{#- One row per record, however many landing files delivered it (R16). Exports overlap: a job running in one
    night's sacct export ends in the next, a request log or a step file is shipped again under another name, a
    month-to-date bill or time report repeats every earlier line. raw keeps every delivery; staging reads one. -#}

{#- Which delivery is the newest: the one whose file arrived later, the first time a load saw its bytes
    (ops.file_arrivals, written by every load: cost_pipeline/ingest/lib/arrivals.py). A correction delivered on a
    later night wins whatever its file is named. Files that arrived in one load (every file of a first night, of a
    new warehouse loaded from a landing folder) have the same arrival: the last by file path wins, then the last
    line. A file whose bytes have no arrival (loaded before arrivals were recorded, its rows kept by raw) is the
    oldest. A renamed file keeps its bytes' arrival: a move is no delivery. -#}

{#- Each file's arrival by its bytes, as a parenthesised query of `arrived_sha256` and `arrived_at`: one row per
    sha256, small beside any raw table, joined to a delivery's `file_sha256`. Bytes two sources hold arrived when
    the first saw them. -#}
{% macro file_arrivals() %}
    (
        select file_sha256 as arrived_sha256, min(first_seen_at) as arrived_at
        from {{ source('ops', 'file_arrivals') }}
        group by file_sha256
    )
{%- endmacro %}

{#- The order of deliveries, newest first (or, `newest=false`, oldest first): `rows` names the delivered rows,
    `arrivals` their file_arrivals() joined on file_sha256. -#}
{% macro delivery_order(rows, arrivals, newest=true) %}
    {%- if newest -%}
        {{ arrivals }}.arrived_at desc nulls last, {{ rows }}.source_file desc, {{ rows }}.source_line desc
    {%- else -%}
        {{ arrivals }}.arrived_at nulls first, {{ rows }}.source_file, {{ rows }}.source_line
    {%- endif -%}
{% endmacro %}

{#- Records with a natural key: `key` lists it (columns or expressions of `relation`'s columns); `prefer` (SQL, best
    first) ranks the deliveries before the newest delivery wins. `relation` (a CTE name or a parenthesised query)
    keeps raw's `file_sha256`. -#}
{% macro newest_delivery(relation, key, prefer=none) %}
    {{- return(adapter.dispatch('newest_delivery', 'cost_pipeline')(relation, key, prefer)) -}}
{% endmacro %}

{#- Every delivery ranked by a window over the key: the whole relation is sorted by it, each row beside its file's
    arrival. -#}
{% macro default__newest_delivery(relation, key, prefer=none) %}
    select *
    from (
        select
            candidates.*,
            row_number() over (
                partition by {{ key | join(', ') }}
                order by {% if prefer %}{{ prefer }}, {% endif %}{{ cost_pipeline.delivery_order('candidates', 'arrivals') }}
            ) as delivery_rank
        from {{ relation }} as candidates
        left join {{ cost_pipeline.file_arrivals() }} as arrivals
            on candidates.file_sha256 = arrivals.arrived_sha256
    ) as deliveries
    where delivery_rank = 1
{% endmacro %}

{#- On DuckDB only the records delivered more than once are ranked, and only they meet their files' arrivals: a
    grouping finds their keys, the others pass as they are (rank 1). The same rows as the window over every row,
    which sorted every record's whole row: a night's ten million requests, nearly all delivered once, took about
    twice as long (docs/benchmarks.md). A key is matched null-safe, as the window's partitions group nulls. The
    relation is read three times: give it a table's name (each read scans the columns it needs; for a table of
    millions of rows this is cheaper than a CTE over it, which DuckDB materialises whole) or a CTE's name (computed
    once), not a parenthesised query (computed three times). -#}
{% macro duckdb__newest_delivery(relation, key, prefer=none) %}
    {%- set repeated -%}
        (
            select {% for k in key %}{{ k }} as delivery_key_{{ loop.index }}, {% endfor %}true as delivered_again
            from {{ relation }} as deliveries
            group by {{ key | join(', ') }}
            having count(*) > 1
        ) as repeated
    {%- endset -%}
    {%- set same_key -%}
        {% for k in key %}{{ k }} is not distinct from repeated.delivery_key_{{ loop.index }}{% if not loop.last %}
        and {% endif %}{% endfor %}
    {%- endset %}
    select candidates.*, cast(1 as bigint) as delivery_rank
    from {{ relation }} as candidates
    left join {{ repeated }}
        on {{ same_key }}
    where repeated.delivered_again is null
    union all
    {{ cost_pipeline.default__newest_delivery(
        '(select candidates.* from ' ~ relation ~ ' as candidates inner join ' ~ repeated ~ ' on ' ~ same_key ~ ')',
        key, prefer) }}
{% endmacro %}

{#- Lines without a record id (FOCUS charges, Harvest entries) from `source_relation` (a raw table): a line whose
    columns all equal a line of another file is the same line delivered again. Within one file a repeated line is
    a charge or an entry of its own, so the n-th copy in one file matches only the n-th copy in another
    (copy_number); the newest delivery's copy is kept (its file arrived later). Every raw column is compared but the
    line's place (file, line, file hash) and `ignore`: annotations a later export may fill in or change on the same
    line (an invoice id, backfilled tags, a person's current roles), whose newest value is the one kept. A column
    added to the raw table later is compared without an edit here.
    `unkept`: raw columns that lines loaded before they were kept have null in all of them (raw keeps the rows of a
    file gone from the landing folder as they were loaded). Such a line is the same line as one that has them, its
    other compared columns equal: it takes their values from the last file by path whose equal lines have them,
    its n-th copy in its own file from that file's n-th such line (ordered by those values), so that file's
    delivery supersedes it. Two lines that both have them and differ in them stay two lines. -#}
{% macro identical_lines_once(source_relation, ignore=[], unkept=[]) %}
    {%- set columns = [] -%}
    {%- set every_column = [] -%}
    {%- if execute -%}
        {%- for column in adapter.get_columns_in_relation(source_relation) -%}
            {%- do every_column.append(adapter.quote(column.name)) -%}
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
    {%- set unkept_columns = [] -%}
    {%- for name in unkept -%}
        {%- if adapter.quote(name) in columns -%}
            {%- do unkept_columns.append(adapter.quote(name)) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set lines = cost_pipeline.unkept_filled(source_relation, every_column, columns, unkept_columns)
        if unkept_columns else source_relation -%}
    {%- set numbered -%}
    (
        select
            lines.*,
            row_number() over (
                partition by {{ columns | join(', ') }}, source_file order by source_line
            ) as copy_number
        from {{ lines }} as lines
    )
    {%- endset %}
    {#- numbered is a parenthesised windowed query: read once, by the window -#}
    {{ cost_pipeline.default__newest_delivery(numbered, columns + ['copy_number']) }}
{% endmacro %}

{#- `source_relation` with the `unkept` columns of its lines that have none of them taken from their match (see
    identical_lines_once), as a parenthesised query of `every_column`. -#}
{% macro unkept_filled(source_relation, every_column, columns, unkept) %}
    {%- set others = [] -%}
    {%- for column in columns if column not in unkept -%}
        {%- do others.append(column) -%}
    {%- endfor -%}
    {%- set others = others | join(', ') -%}
    (
        select
            {%- for c in every_column %}
            {% if c in unkept -%}
            case
                when has_unkept then {{ c }}
                else max(case when has_unkept and source_file = unkept_file then {{ c }} end)
                    over (partition by {{ others }}, unkept_match)
            end as {{ c }}
            {%- else -%}
            {{ c }}
            {%- endif %}{% if not loop.last %},{% endif %}
            {%- endfor %}
        from (
            select
                referenced.*,
                case
                    when not has_unkept and source_file <> unkept_file
                        then row_number() over (
                            partition by {{ others }}, source_file, has_unkept order by source_line
                        )
                    when has_unkept and source_file = unkept_file
                        then row_number() over (
                            partition by {{ others }}, source_file, has_unkept
                            order by {% for c in unkept %}{{ c }} nulls last, {% endfor %}source_line
                        )
                end as unkept_match
            from (
                select
                    kept_or_not.*,
                    max(case when has_unkept then source_file end) over (partition by {{ others }}) as unkept_file
                from (
                    select
                        candidates.*,
                        ({% for c in unkept %}{{ c }} is not null{% if not loop.last %} or {% endif %}{% endfor %})
                            as has_unkept
                    from {{ source_relation }} as candidates
                ) as kept_or_not
            ) as referenced
        ) as matched
    )
{%- endmacro %}
