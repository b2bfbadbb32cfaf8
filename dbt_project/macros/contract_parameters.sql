{#- Contract parameters (R3) as columns, one row per contract version: `parameters` maps a parameter's name in the
    contract to its column name here. A parameter a version does not set is null in that version's row. -#}
{% macro contract_parameters(parameters) %}
    select
        contract_version,
        {%- for name, column in parameters.items() %}
        max(case when parameter_name = '{{ name }}' then parameter_value end) as {{ column }}
        {%- if not loop.last %},{% endif %}
        {%- endfor %}
    from {{ ref('stg_contract__parameters') }}
    group by contract_version
{% endmacro %}
