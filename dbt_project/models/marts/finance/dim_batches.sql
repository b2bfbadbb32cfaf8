-- The registered batches (R1) plus the explicit 'unattributed' bucket that holds every row without one.
with batches as (
    select * from {{ ref('stg_registry__batches') }}
),

latest_contract as (
    select contract_version
    from (
        select contract_version, row_number() over (
            order by {{ dbt.length('contract_version') }} desc, contract_version desc) as newest
        from {{ ref('stg_contract__enumerations') }}
    ) as versions
    where newest = 1
    group by contract_version
)

select
    batch_id,
    project,
    goal,
    team,
    data_version,
    model_version,
    code_version,
    config_version,
    contract_version,
    false as is_unattributed_bucket
from batches

union all

select
    'unattributed' as batch_id,
    cast(null as {{ dbt.type_string() }}) as project,
    'Rows that carry no registered batch key (R1)' as goal,
    cast(null as {{ dbt.type_string() }}) as team,
    cast(null as {{ dbt.type_string() }}) as data_version,
    cast(null as {{ dbt.type_string() }}) as model_version,
    cast(null as {{ dbt.type_string() }}) as code_version,
    cast(null as {{ dbt.type_string() }}) as config_version,
    contract_version,
    true as is_unattributed_bucket
from latest_contract
