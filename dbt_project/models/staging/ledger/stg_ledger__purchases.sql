with source as (
    select * from {{ source('raw', 'ledger_purchases') }}
),

-- A reference file delivered again (a whole new export, other bytes): each purchase once, from the newest file.
-- A purchase is its id compared case-folded (same_id): a re-export writing gpu-node-01 as GPU-NODE-01 supersedes the
-- older spelling's line, never a second purchase; the newest file's spelling is shown.
newest as (
    {{ newest_delivery('source', [same_id('purchase_id')]) }}
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
