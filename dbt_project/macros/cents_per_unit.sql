{#- A price per unit to `scale` decimals of the currency (2 to 6; decimal(18, scale)), from integer `cents` over a
    positive integer count `units`, rounded half away from zero, exactly: integer arithmetic in units of the last
    decimal (cents x 10^(scale-2) / units), so no engine's double or decimal division rounds first (53.5003125 is
    53.500313 on every engine). In bigint: exact while |cents| x 10^(scale-1) < 9.2e18 (at 6 decimals, 4.6 trillion
    in currency). -#}
{% macro cents_per_unit(cents, units, scale=6) -%}
    {%- set last_decimals = integer_divide(
        '2 * abs(cast(' ~ cents ~ ' as bigint)) * ' ~ 10 ** (scale - 2) ~ ' + ' ~ units,
        '2 * cast(' ~ units ~ ' as bigint)') %}
    cast(cast(sign({{ cents }}) as bigint) * {{ last_decimals }} * {{ '%.*f' | format(scale, 10 ** -scale) }}
        as decimal(18, {{ scale }}))
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
