with source as (
    select * from {{ source('raw', 'ledger_purchases') }}
),

renamed as (
    select
        purchase_id,
        purchased_on,
        asset_class,
        description,
        quantity,
        unit_price,
        currency,
        gpus_per_unit,
        depreciation_years,
        salvage_value
    from source
)

select * from renamed
