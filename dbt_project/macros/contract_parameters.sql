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

{#- A contract parameter given per month (`<prefix>.<YYYY-MM>`, e.g. grid_intensity_g_co2e_per_kwh.2026-11) as rows:
    contract_version, month_start (the name's last seven characters, the first of that month) and `column`. -#}
{% macro monthly_contract_parameter(prefix, column) %}
    select
        contract_version,
        cast({{ dbt.concat([dbt.right('parameter_name', '7'), "'-01'"]) }} as date) as month_start,
        parameter_value as {{ column }}
    from {{ ref('stg_contract__parameters') }}
    where parameter_name like '{{ prefix }}.%'
{% endmacro %}
