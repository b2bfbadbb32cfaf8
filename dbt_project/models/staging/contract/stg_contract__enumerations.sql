with source as (
    select * from {{ source('raw', 'contract_enumerations') }}
),

renamed as (
    select
        contract_version,
        enumeration,
        code,
        category,
        is_rerun,
        is_same_cause,
        description
    from source
)

select * from renamed
