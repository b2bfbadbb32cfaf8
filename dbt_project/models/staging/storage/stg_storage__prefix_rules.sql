with source as (
    select * from {{ source('raw', 'storage_prefix_rules') }}
),

renamed as (
    select
        bucket,
        -- A blank prefix is the whole bucket.
        coalesce(prefix, '') as prefix,
        purpose,
        owner,
        batch_id,
        retention_days,
        source_file,
        source_line
    from source
)

select * from renamed
