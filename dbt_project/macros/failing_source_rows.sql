{#-
    A failing test's stored rows name the landing file and line (issue 10, docs/reliability.md). When dbt stores a
    test's failures (`dbt test --store-failures`, which the nightly job runs on every error test that failed, see
    cost_pipeline/dbt_failures.py), a test on a model that carries source_file and source_line returns the model's
    own rows that break the rule, those two columns included, instead of one row per offending value. dbt's own
    not_null does the same (`select *` when storing failures). Otherwise, as every night, each test is the SQL it
    always was. Tests: tests/test_dbt_failures.py.
-#}
{% macro traces_source_rows(model) %}
    {%- if not execute or model is string or not should_store_failures() -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set names = adapter.get_columns_in_relation(model) | map(attribute='name') | map('lower') | list -%}
    {{ return('source_file' in names and 'source_line' in names) }}
{% endmacro %}

{#- The rows of `model` whose `key` (columns, comma-separated) occurs more than once, with how often as `counted_as`. -#}
{% macro rows_sharing_key(model, key, counted_as, not_null=none) %}
select *
from (
    select
        *,
        count(*) over (partition by {{ key }}) as {{ counted_as }}
    from {{ model }}
    {%- if not_null %}
    where {{ not_null }} is not null
    {%- endif %}
) as counted
where {{ counted_as }} > 1
{% endmacro %}

{% macro default__test_unique(model, column_name) %}
    {%- if traces_source_rows(model) -%}
        {{ rows_sharing_key(model, column_name, 'n_records', not_null=column_name) }}
    {%- else -%}
        {{ dbt.default__test_unique(model, column_name) }}
    {%- endif -%}
{% endmacro %}

{% macro default__test_accepted_values(model, column_name, values, quote=True) %}
    {%- if traces_source_rows(model) %}
select *
from {{ model }}
where {{ column_name }} not in (
    {%- for value in values -%}
        {{ dbt.string_literal(value) if quote else value }}{{ ", " if not loop.last }}
    {%- endfor -%}
)
    {%- else -%}
        {{ dbt.default__test_accepted_values(model, column_name, values, quote) }}
    {%- endif -%}
{% endmacro %}

{% macro default__test_relationships(model, column_name, to, field) %}
    {%- if traces_source_rows(model) %}
select *
from {{ model }} as child
where
    child.{{ column_name }} is not null
    and not exists (
        select 1
        from {{ to }} as parent
        where parent.{{ field }} = child.{{ column_name }}
    )
    {%- else -%}
        {{ dbt.default__test_relationships(model, column_name, to, field) }}
    {%- endif -%}
{% endmacro %}
