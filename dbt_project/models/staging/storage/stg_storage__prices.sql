with source as (
    select * from {{ source('raw', 'storage_prices') }}
),

-- A reference file delivered again (a whole new export, other bytes): each storage class once, from the newest file.
newest as (
    {{ newest_delivery('source', ['storage_class']) }}
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
