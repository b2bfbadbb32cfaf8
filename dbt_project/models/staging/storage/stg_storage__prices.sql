with source as (
    select * from {{ source('raw', 'storage_prices') }}
),

renamed as (
    select
        storage_class,
        price_per_gb_month,
        source_file,
        source_line
    from source
)

select * from renamed
