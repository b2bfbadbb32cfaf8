{#- Whole seconds from one timestamp to another; null when either is null. dbt.datediff counts the second
    boundaries crossed: right for times kept to the second (scheduler times, sample times, month bounds), wrong for
    a sub-second duration (a step of 0.350 s reads 0 or 1): that is exact_seconds_between's. -#}
{% macro seconds_between(start_expression, end_expression) -%}
    {{ dbt.datediff(start_expression, end_expression, 'second') }}
{%- endmacro %}

{#- Exact seconds from one timestamp to another, to the millisecond, as decimal(18, 3); null when either is null.
    Durations measured below the second (training steps, R7) are read with it. -#}
{% macro exact_seconds_between(start_expression, end_expression) -%}
    {{ return(adapter.dispatch('exact_seconds_between', 'cost_pipeline')(start_expression, end_expression)) }}
{%- endmacro %}

{% macro default__exact_seconds_between(start_expression, end_expression) -%}
    cast({{ dbt.datediff(start_expression, end_expression, 'millisecond') }} / 1000.0 as decimal(18, 3))
{%- endmacro %}

{#- dbt-spark's datediff in milliseconds divides whole seconds by the double 1/1000 and rounds up: 900 s reads
    900.001. Spark's epoch milliseconds are exact. -#}
{% macro spark__exact_seconds_between(start_expression, end_expression) -%}
    cast((unix_millis({{ end_expression }}) - unix_millis({{ start_expression }})) / 1000.0 as decimal(18, 3))
{%- endmacro %}
