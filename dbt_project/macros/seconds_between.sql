{#- Whole seconds from one timestamp to another; null when either is null. -#}
{% macro seconds_between(start_expression, end_expression) -%}
    {{ dbt.datediff(start_expression, end_expression, 'second') }}
{%- endmacro %}
