with source as (
    select * from {{ source('raw', 'contract_parameters') }}
),

renamed as (
    select
        contract_version,
        name as parameter_name,
        value as parameter_value
    from source
)

select * from renamed
