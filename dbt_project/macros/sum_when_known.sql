{#- The sum of `expression` over a group when every row's value is known, else null. SQL's sum skips nulls, so a
    group with one unpriced row would show the sum of its priced rows as if it were the whole (no silent zero, no
    partial sum). An empty group's sum is null, as sum's. -#}
{% macro sum_when_known(expression) -%}
    case when count(*) = count({{ expression }}) then sum({{ expression }}) end
{%- endmacro %}
