{#- The contract's reporting currency (ISO 4217) as a column value: every amount of a money mart is in it. The
    var is set in dbt_project.yml; tests/test_currency.py checks it equals the contract's reporting_currency. -#}
{% macro reporting_currency() -%}
    cast('{{ var("reporting_currency") }}' as {{ dbt.type_string() }})
{%- endmacro %}
