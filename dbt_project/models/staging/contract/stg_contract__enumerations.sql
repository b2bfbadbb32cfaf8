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
        lower_bound,
        upper_bound,
        description
    from source
)

select * from renamed
