with source as (
    select * from {{ source('raw', 'storage_prefix_rules') }}
),

-- A reference file delivered again (a whole new export, other bytes): each bucket prefix once, from the newest file.
newest as (
    {{ newest_delivery('source', ['bucket', "coalesce(prefix, '')"]) }}
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
    from newest
)

select * from renamed
