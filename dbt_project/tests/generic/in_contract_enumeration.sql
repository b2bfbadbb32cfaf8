{#-
    accepted_values drawn from the definitions contract (R3): fails on every row whose non-null value of
    column_name is not a code of the named enumeration in stg_contract__enumerations, in any contract version
    (a batch keeps the version it was registered with, so a code of any shipped version is a contract code).
    With stored failures, a model that carries source_file and source_line gives the failing rows whole
    (macros/failing_source_rows.sql).
-#}
{% test in_contract_enumeration(model, column_name, enumeration) %}

{%- set whole_rows = traces_source_rows(model) %}

with contract_codes as (
    select code
    from {{ ref('stg_contract__enumerations') }}
    where enumeration = {{ dbt.string_literal(enumeration) }}
),

checked as (
    select
        {{ column_name }} as value_checked{{ ", *" if whole_rows }}
    from {{ model }}
    where {{ column_name }} is not null
)

select {{ "*" if whole_rows else "value_checked" }}
from checked
where not exists (
    select 1
    from contract_codes
    where contract_codes.code = checked.value_checked
)

{% endtest %}
