{#- The newest contract version shipped (v10 sorts after v9): a scalar subquery. Rows without a batch, and the
    service book, are computed under it; batches keep the version they were registered with. -#}
{% macro latest_contract_version() %}
(
    select max(contract_version)
    from (
        select
            contract_version,
            row_number() over (order by {{ newest_contract_version_first('contract_version') }}) as newest
        from {{ ref('stg_contract__enumerations') }}
    ) as contract_versions
    where newest = 1
)
{% endmacro %}

{#- An order by clause putting the newest contract version first (v10 after v9: longer first, then by text). -#}
{% macro newest_contract_version_first(column) -%}
    {{ dbt.length(column) }} desc, {{ column }} desc
{%- endmacro %}
