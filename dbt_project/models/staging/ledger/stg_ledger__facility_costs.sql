with source as (
    select * from {{ source('raw', 'ledger_facility') }}
),

renamed as (
    select
        cast({{ dbt.concat(["substring(month, 1, 7)", "'-01'"]) }} as date) as cost_month,
        item,
        amount,
        currency
    from source
)

select * from renamed
