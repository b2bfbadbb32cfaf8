with source as (
    select * from {{ source('raw', 'storage_inventory') }}
),

renamed as (
    select
        bucket,
        object_key,
        version_id,
        size_bytes,
        last_modified_at,
        etag,
        storage_class,
        inventory_at,
        inventory_date_from,
        source_file,
        source_line
    from source
)

select * from renamed
