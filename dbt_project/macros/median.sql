{#- Median of a column. Not in dbt's cross-database set, so dispatched per adapter. -#}
{% macro median(expression) -%}
    {{ return(adapter.dispatch('median', 'cost_pipeline')(expression)) }}
{%- endmacro %}

{% macro default__median(expression) -%}
    percentile_cont(0.5) within group (order by {{ expression }})
{%- endmacro %}

{% macro duckdb__median(expression) -%}
    median({{ expression }})
{%- endmacro %}

{% macro spark__median(expression) -%}
    percentile({{ expression }}, 0.5)
{%- endmacro %}
