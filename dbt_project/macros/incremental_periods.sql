{#- Models incremental by period (issue 15: a night pays for the new day's files, not for history). An inputs model
    (int_device_samples_inputs, int_requests_inputs) states what a build is made from tonight: one row per input
    (kind, item, a fingerprint, and the time it spans; no span for an input every period follows, such as the
    contract), the invocation that built it (built_by). Each incremental model keeps, beside it, the inputs of its
    last build (kept_inputs, written by its post-hook remember_inputs in the same transaction as its rows); the next
    build compares them with tonight's (changed_inputs) and builds again the periods (days, months) the changed ones
    span (periods_to_build), after its pre-hook deleted their rows (periods_forget). Everything is built again when
    an input without a span changed, no inputs were kept, or the inputs model was not built in this dbt invocation.
    int_gpu_share_days and int_unattributed_gpu_days are incremental by day (macros/sample_days.sql),
    stg_serving__requests and int_requests_costed by month (macros/request_months.sql). -#}

{#- Where the inputs of ``model``'s last build are kept: a table beside it (``model``_built). -#}
{% macro kept_inputs(model) -%}
    {{ return(this.incorporate(path={'identifier': model ~ '_built'})) }}
{%- endmacro %}

{#- Whether the inputs model ``inputs`` was built in this dbt invocation. When it was not (a model selected without
    it), what it names may be stale: every period is built again and the kept inputs are dropped, so that the next
    build with it builds every period again too. -#}
{% macro inputs_fresh(inputs) -%}
    {%- if not execute -%}{{ return(false) }}{%- endif -%}
    {%- set relation = load_relation(ref(inputs)) -%}
    {%- if relation is none -%}{{ return(false) }}{%- endif -%}
    {%- set built_by = run_query('select max(built_by) from ' ~ relation).rows[0][0] -%}
    {{ return(built_by == invocation_id) }}
{%- endmacro %}

{#- Post-hook: the inputs this build was made from (``inputs``' rows but its code, and ``code``: the hash of the
    code the model's rows follow), kept in ``state`` for the next build; none when the inputs are not this run's. -#}
{% macro remember_inputs(state, inputs, code) -%}
    {%- if config.get('materialized') == 'incremental' -%}
        {%- if inputs_fresh(inputs) -%}
        create or replace table {{ state }} as
        select kind, item, fingerprint, span_start, span_end
        from {{ ref(inputs) }}
        where kind <> 'code'
        union all
        select 'code' as kind, 'code' as item, '{{ code }}' as fingerprint, null as span_start, null as span_end
        {%- else -%}
        drop table if exists {{ state }}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

{#- The first day of the ``unit`` (day or month) after the one that starts on ``start`` (a date). -#}
{% macro next_period(start, unit) -%}
    {%- if unit == 'day' -%}
        {{ return(start + modules.datetime.timedelta(days=1)) }}
    {%- elif unit == 'month' -%}
        {{ return((start.replace(day=28) + modules.datetime.timedelta(days=4)).replace(day=1)) }}
    {%- else -%}
        {{ exceptions.raise_compiler_error('next_period: unit ' ~ unit ~ ' is neither day nor month') }}
    {%- endif -%}
{%- endmacro %}

{#- The periods (``unit``: day or month) ``model`` builds again, as ranges [first period's start, the start of the
    period after the last) in time order; none for every period: a full build, no kept inputs, ``inputs`` not built in
    this dbt invocation, or a changed input without a span (the contract, the code: ``code`` is the hash of the code
    the model's rows follow). A period is built again when an input that spans part of it is new, changed or gone.
    ``kinds``: the kinds of input the model's rows follow (none: every kind; the code always). -#}
{% macro periods_to_build(model, inputs, code, unit, kinds=none) -%}
    {%- if not execute or not is_incremental() -%}{{ return(none) }}{%- endif -%}
    {%- set state = load_relation(kept_inputs(model)) -%}
    {%- if state is none or not inputs_fresh(inputs) -%}{{ return(none) }}{%- endif -%}
    {%- set of_kinds -%}
        {%- if kinds is not none %} and kind in ('{{ (kinds + ['code']) | join("', '") }}'){% endif -%}
    {%- endset -%}
    {%- set changed_query -%}
        with current_inputs as (
            select kind, item, fingerprint, span_start, span_end
            from {{ ref(inputs) }}
            where kind <> 'code'{{ of_kinds }}
            union all
            select 'code' as kind, 'code' as item, '{{ code }}' as fingerprint, null as span_start, null as span_end
        ),

        built as (
            select kind, item, fingerprint, span_start, span_end from {{ state }} where 1 = 1{{ of_kinds }}
        ),

        changed as (
            {{ changed_inputs('current_inputs', 'built') }}
        )

        select
            cast({{ dbt.date_trunc(unit, 'span_start') }} as date) as first_period,
            cast({{ dbt.date_trunc(unit, 'span_end') }} as date) as last_period
        from changed
        group by 1, 2
        order by 1 nulls first, 2 nulls first
    {%- endset -%}
    {%- set ranges = [] -%}
    {%- for row in run_query(changed_query).rows -%}
        {%- if row[0] is none or row[1] is none -%}{{ return(none) }}{%- endif -%}
        {%- set after = next_period(row[1], unit) -%}
        {%- if ranges and row[0] <= ranges[-1][1] -%}
            {%- set last = ranges.pop() -%}
            {%- do ranges.append([last[0], [last[1], after] | max]) -%}
        {%- else -%}
            {%- do ranges.append([row[0], after]) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(ranges) }}
{%- endmacro %}

{#- A condition: ``column`` lies in one of ``ranges`` (periods_to_build), with the bounds as constants so that scans
    skip the other periods; false for no range. -#}
{% macro periods_where(ranges, column) -%}
    {%- if ranges | length == 0 -%}
        1 = 0
    {%- else -%}
        ({%- for range in ranges %}{% if not loop.first %} or {% endif -%}
            ({{ column }} >= cast('{{ range[0] }}' as {{ dbt.type_timestamp() }})
            and {{ column }} < cast('{{ range[1] }}' as {{ dbt.type_timestamp() }}))
        {%- endfor %})
    {%- endif -%}
{%- endmacro %}

{#- ``periods_where`` for the periods ``periods_to_build`` returned, or none (every period). -#}
{% macro periods_filter(ranges, column) -%}
    {{ return(none if ranges is none else periods_where(ranges, column)) }}
{%- endmacro %}

{#- Pre-hook: an incremental build deletes the rows whose ``column`` lies in the periods ``ranges`` it builds again
    (periods_to_build; every row for none: every period). -#}
{% macro periods_forget(ranges, column) -%}
    {%- if is_incremental() -%}
        delete from {{ this }}
        {%- if ranges is not none %} where {{ periods_where(ranges, column) }}{% endif -%}
    {%- endif -%}
{%- endmacro %}

{#- The inputs (kind, span_start, span_end) of ``current`` not in ``built`` (new or changed: tonight's span) and of
    ``built`` not in ``current`` (changed or gone: the span they had), both relations of kind, item, fingerprint and
    span (an inputs model, and the inputs kept beside a model). -#}
{% macro changed_inputs(current, built) %}
    select {{ current }}.kind, {{ current }}.span_start, {{ current }}.span_end
    from {{ current }}
    left join {{ built }}
        on {{ current }}.kind = {{ built }}.kind
        and {{ current }}.item = {{ built }}.item
        and {{ current }}.fingerprint = {{ built }}.fingerprint
    where {{ built }}.item is null
    union all
    select {{ built }}.kind, {{ built }}.span_start, {{ built }}.span_end
    from {{ built }}
    left join {{ current }}
        on {{ built }}.kind = {{ current }}.kind
        and {{ built }}.item = {{ current }}.item
        and {{ built }}.fingerprint = {{ current }}.fingerprint
    where {{ current }}.item is null
{% endmacro %}

{#- The inputs of a model's last build (kind, item, fingerprint, span), kept in ``state``; none when nothing was kept. -#}
{% macro built_inputs(state) -%}
    {%- if state is not none %}
    select kind, item, fingerprint, span_start, span_end from {{ state }}
    {%- else %}
    select
        cast(null as {{ dbt.type_string() }}) as kind,
        cast(null as {{ dbt.type_string() }}) as item,
        cast(null as {{ dbt.type_string() }}) as fingerprint,
        cast(null as {{ dbt.type_timestamp() }}) as span_start,
        cast(null as {{ dbt.type_timestamp() }}) as span_end
    where 1 = 0
    {%- endif %}
{%- endmacro %}

{#- An inputs model's request logs or sample files (CTE ``files``: item, fingerprint), each with the time it spans:
    tonight's (``new_spans``) for a file the last build did not read, the span kept (``built``) for one it did. -#}
{% macro file_inputs(files, new_spans, built) %}
    select 'file' as kind, {{ files }}.item, {{ files }}.fingerprint, {{ new_spans }}.span_start, {{ new_spans }}.span_end
    from {{ files }}
    inner join {{ new_spans }} on {{ files }}.item = {{ new_spans }}.item
    union all
    select 'file' as kind, {{ files }}.item, {{ files }}.fingerprint, {{ built }}.span_start, {{ built }}.span_end
    from {{ files }}
    inner join {{ built }}
        on {{ built }}.kind = 'file'
        and {{ files }}.item = {{ built }}.item
        and {{ files }}.fingerprint = {{ built }}.fingerprint
{% endmacro %}

{#- The code an incremental model's rows follow, as one hash: ``texts`` (the SQL of its models and the macros they
    call, rendered) and ``rules``, the macros that decide what is built again, as written (a fix to them builds
    everything once). -#}
{% macro code_fingerprint(texts, rules) -%}
    {%- for rule in rules -%}
        {%- do texts.append(rule.macro.macro_sql) -%}
    {%- endfor -%}
    {{- return(local_md5(texts | join('\n'))) -}}
{%- endmacro %}
