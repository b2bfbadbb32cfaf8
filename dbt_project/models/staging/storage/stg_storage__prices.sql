with source as (
    select * from {{ source('raw', 'storage_prices') }}
),

-- A reference file delivered again (a whole new export, other bytes): each storage class once, from the newest file.
-- A class is its name compared case-folded (same_id): AWS writes STANDARD, a price list may write Standard; the
-- inventories' classes are matched to these the same way (int_storage_objects_costed).
newest as (
    {{ newest_delivery('source', [same_id('storage_class')]) }}
),

renamed as (
    select
        storage_class,
        price_per_gb_month,
        source_file,
        source_line
    from newest
)

select * from renamed
