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

{#- `amount` (money, at most 2 decimals) x `part` / `whole`, to `scale` decimals (2 to 6; decimal(18, scale)), for
    a share of a cost by GPU-seconds (`part` >= 0 of `whole` > 0). When both are whole numbers (whole GPUs) the share
    is rounded half away from zero, exactly, in integer arithmetic in units of the last decimal, as cents_per_unit:
    1.15 x 1 / 2 is 0.58 on every engine (DuckDB's double 0.57499... rounded to 0.57). While |amount| x part x
    10^scale stays below 4e18 (a bigint's half); above that, or for a fractional part (a MIG slice's or a discarded
    share's GPU-seconds), the share is the double quotient rounded. -#}
{% macro money_share(amount, part, whole, scale=2) -%}
    {%- set amount, part, whole = '(' ~ amount ~ ')', '(' ~ part ~ ')', '(' ~ whole ~ ')' %}
    {%- set units = 'abs(cast(' ~ amount ~ ' * ' ~ 10 ** scale ~ ' as bigint))' %}
    case
        when {{ part }} = floor({{ part }}) and {{ whole }} = floor({{ whole }})
            and abs(cast({{ amount }} as double)) * {{ part }} * {{ 10 ** scale }} < 4e18
        then cast(cast(sign({{ amount }}) as bigint) * {{ integer_divide(
            '2 * ' ~ units ~ ' * cast(' ~ part ~ ' as bigint) + cast(' ~ whole ~ ' as bigint)',
            '2 * cast(' ~ whole ~ ' as bigint)') }} * {{ '%.*f' | format(scale, 10 ** -scale) }} as decimal(18, {{ scale }}))
        else cast(round(cast({{ amount }} as double) * {{ part }} / {{ whole }}, {{ scale }}) as decimal(18, {{ scale }}))
    end
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
