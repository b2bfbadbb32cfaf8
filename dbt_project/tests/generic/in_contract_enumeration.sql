{#-
    accepted_values drawn from the definitions contract (R3): fails on every row whose non-null value of
    column_name is not a code of the named enumeration in stg_contract__enumerations, in any contract version
    (a batch keeps the version it was registered with, so a code of any shipped version is a contract code).
-#}
{% test in_contract_enumeration(model, column_name, enumeration) %}

with contract_codes as (
    select code
    from {{ ref('stg_contract__enumerations') }}
    where enumeration = {{ dbt.string_literal(enumeration) }}
),

checked as (
    select {{ column_name }} as value_checked
    from {{ model }}
    where {{ column_name }} is not null
)

select value_checked
from checked
where not exists (
    select 1
    from contract_codes
    where contract_codes.code = checked.value_checked
)

{% endtest %}
