{#- The one lookup of a contract enumeration (stg_contract__enumerations), as a join clause that names the table
    `alias`: its code, category, flags and bounds as `enumeration` defines them in `contract_version`. The row is
    found by its code (`code`, an expression) or, for bucketed enumerations, by the range [lower_bound,
    upper_bound) that holds `value` (an open upper bound has no limit). `join` is the join kind (left by default:
    a value the contract does not know keeps its row). Further conditions may follow the call with `and`. -#}
{% macro join_contract_enumeration(alias, enumeration, contract_version, code=none, value=none, join='left') %}
    {{ join }} join {{ ref('stg_contract__enumerations') }} as {{ alias }}
        on {{ alias }}.enumeration = {{ dbt.string_literal(enumeration) }}
        and {{ alias }}.contract_version = {{ contract_version }}
        {%- if code is not none %}
        and {{ alias }}.code = {{ code }}
        {%- endif %}
        {%- if value is not none %}
        and {{ value }} >= {{ alias }}.lower_bound
        and ({{ alias }}.upper_bound is null or {{ value }} < {{ alias }}.upper_bound)
        {%- endif %}
{%- endmacro %}
