{#- A price per unit to the millionth of the currency, from integer `cents` over a positive integer count `units`,
    rounded half away from zero, exactly: integer arithmetic in millionths (cents x 10,000 / units), so no engine's
    double or decimal division rounds first (53.5003125 is 53.500313 on every engine). decimal(18, 6). In bigint:
    exact while |cents| < 4.6e14 (4.6 trillion in currency). -#}
{% macro cents_per_unit(cents, units) -%}
    {%- set millionths = integer_divide(
        '2 * abs(cast(' ~ cents ~ ' as bigint)) * 10000 + ' ~ units, '2 * cast(' ~ units ~ ' as bigint)') %}
    cast(cast(sign({{ cents }}) as bigint) * {{ millionths }} * 0.000001 as decimal(18, 6))
{%- endmacro %}

{#- Integer division of two non-negative integers, truncated. dbt has no cross-database macro for it: `/` is a
    double on DuckDB and Spark. -#}
{% macro integer_divide(numerator, denominator) -%}
    {{ return(adapter.dispatch('integer_divide', 'cost_pipeline')(numerator, denominator)) }}
{%- endmacro %}

{% macro default__integer_divide(numerator, denominator) -%}
    cast(floor(({{ numerator }}) / ({{ denominator }})) as bigint)
{%- endmacro %}

{% macro duckdb__integer_divide(numerator, denominator) -%}
    (({{ numerator }}) // ({{ denominator }}))
{%- endmacro %}

{% macro spark__integer_divide(numerator, denominator) -%}
    (({{ numerator }}) div ({{ denominator }}))
{%- endmacro %}
