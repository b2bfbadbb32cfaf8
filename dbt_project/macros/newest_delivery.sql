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
    `optional`: raw columns a file may not have (a FOCUS export may leave out any optional column; rows loaded
    before a column was kept have it null, raw keeping a gone file's rows as loaded). A file has such a column when
    any of its lines has a value in it; a file without it is null there on every line. Its value is unknown, not
    null: a line of a file without some of them is the same line as one of another file that has them and equals
    it in every column both files have (optional_filled), so a later export with fewer columns counts each line
    once. Two lines whose files both have a column and differ in it stay two lines.
    `rows`: a parenthesised query of some of `source_relation`'s rows, all its columns, to read instead of the
    whole table (stg_billing__focus_charges: the lines no newer export run replaced). -#}
{% macro identical_lines_once(source_relation, ignore=[], optional=[], rows=none) %}
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
    {%- set optional_columns = [] -%}
    {%- for name in optional -%}
        {%- if adapter.quote(name) in columns -%}
            {%- do optional_columns.append(adapter.quote(name)) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set read = rows if rows else source_relation -%}
    {%- set lines = cost_pipeline.optional_filled(read, every_column, columns, optional_columns)
        if optional_columns else read -%}
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

{#- `source_relation` as a parenthesised query of `every_column`, the `optional` columns a line's file does not have
    taken from the line it matches (see identical_lines_once). Its n-th copy in its own file matches the n-th (by
    line) of the lines of another file that has some column it lacks and equal it in every column its file has: of
    such files, the one that has most optional columns, then the last by path. A line whose file has every optional
    column, or that matches no line, is as loaded. -#}
{% macro optional_filled(source_relation, every_column, columns, optional) %}
    {%- set others = [] -%}
    {%- for column in columns if column not in optional -%}
        {%- do others.append(column) -%}
    {%- endfor -%}
    {%- set marked -%}
        (
            select
                candidates.*,
                {%- for c in optional %}
                bool_or({{ c }} is not null) over (partition by source_file) as file_has_{{ loop.index }},
                {%- endfor %}
                row_number() over (
                    partition by {{ columns | join(', ') }}, source_file order by source_line
                ) as own_copy
            from {{ source_relation }} as candidates
        )
    {%- endset -%}
    {%- set matched -%}
        (
            select
                lacking.source_file,
                lacking.source_line,
                lacking.file_sha256,
                lacking.own_copy,
                {%- for c in optional %}
                other.{{ c }} as matched_{{ loop.index }},
                {%- endfor %}
                other.source_file as other_file,
                {% for c in optional %}cast(other.file_has_{{ loop.index }} as integer) + {% endfor %}0 as other_has,
                row_number() over (
                    partition by lacking.source_file, lacking.source_line, lacking.file_sha256, other.source_file
                    order by other.source_line
                ) as other_copy
            from {{ marked }} as lacking
            inner join {{ marked }} as other
                on other.source_file <> lacking.source_file
                {%- for c in others %}
                and other.{{ c }} is not distinct from lacking.{{ c }}
                {%- endfor %}
                {%- for c in optional %}
                and (not lacking.file_has_{{ loop.index }} or other.{{ c }} is not distinct from lacking.{{ c }})
                {%- endfor %}
                and ({% for c in optional %}(other.file_has_{{ loop.index }} and not lacking.file_has_{{ loop.index }}){% if not loop.last %}
                    or {% endif %}{% endfor %})
        )
    {%- endset -%}
    (
        select
            {%- for c in every_column %}
            {% if c in optional -%}
            case when lines.file_has_{{ optional.index(c) + 1 }} or matched.source_file is null then lines.{{ c }}
                else matched.matched_{{ optional.index(c) + 1 }} end as {{ c }}
            {%- else -%}
            lines.{{ c }}
            {%- endif %}{% if not loop.last %},{% endif %}
            {%- endfor %}
        from {{ marked }} as lines
        left join (
            select *
            from (
                select
                    pairs.*,
                    row_number() over (
                        partition by source_file, source_line, file_sha256 order by other_has desc, other_file desc
                    ) as preference
                from {{ matched }} as pairs
                where other_copy = own_copy
            ) as copies
            where preference = 1
        ) as matched
            on lines.source_file = matched.source_file
            and lines.source_line = matched.source_line
            and lines.file_sha256 is not distinct from matched.file_sha256
    )
{%- endmacro %}
