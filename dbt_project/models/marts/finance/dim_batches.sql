-- The registered batches (R1) plus the explicit 'unattributed' bucket that holds every row without one.
with batches as (
    select * from {{ ref('stg_registry__batches') }}
),

latest_contract as (
    select {{ latest_contract_version() }} as contract_version
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
