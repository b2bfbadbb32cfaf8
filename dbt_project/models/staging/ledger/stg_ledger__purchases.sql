with source as (
    select * from {{ source('raw', 'ledger_purchases') }}
),

-- A reference file delivered again (a whole new export, other bytes): each purchase once, from the newest file.
newest as (
    {{ newest_delivery('source', ['purchase_id']) }}
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
        salvage_value,
        source_file,
        source_line
    from newest
)

select * from renamed
