{#- Whole seconds from one timestamp to another; null when either is null. dbt.datediff counts the second
    boundaries crossed: right for times kept to the second (scheduler times, sample times, month bounds), wrong for
    a sub-second duration (a step of 0.350 s reads 0 or 1): that is exact_seconds_between's. -#}
{% macro seconds_between(start_expression, end_expression) -%}
    {{ dbt.datediff(start_expression, end_expression, 'second') }}
{%- endmacro %}

{#- Exact seconds from one timestamp to another, to the millisecond, as decimal(18, 3); null when either is null.
    Durations measured below the second (training steps, R7) are read with it. -#}
{% macro exact_seconds_between(start_expression, end_expression) -%}
    cast({{ dbt.datediff(start_expression, end_expression, 'millisecond') }} / 1000.0 as decimal(18, 3))
{%- endmacro %}
