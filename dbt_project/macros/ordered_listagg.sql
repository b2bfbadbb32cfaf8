{#- `expression`'s values of a group joined by `delimiter` (a SQL string literal), in the order of `order_by`.
    dbt's listagg takes the order as a clause, which its Spark implementation refuses: dispatched. -#}
{% macro ordered_listagg(expression, delimiter, order_by) -%}
    {{ return(adapter.dispatch('ordered_listagg', 'cost_pipeline')(expression, delimiter, order_by)) }}
{%- endmacro %}

{% macro default__ordered_listagg(expression, delimiter, order_by) -%}
    {{ dbt.listagg(expression, delimiter, 'order by ' ~ order_by) }}
{%- endmacro %}

{% macro spark__ordered_listagg(expression, delimiter, order_by) -%}
    case when count({{ expression }}) > 0 then array_join(transform(
        array_sort(collect_list(named_struct('position', {{ order_by }}, 'value', {{ expression }}))),
        item -> item.value
    ), {{ delimiter }}) end
{%- endmacro %}
