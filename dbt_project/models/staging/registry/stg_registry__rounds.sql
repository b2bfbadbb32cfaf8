with source as (
    select * from {{ source('raw', 'batch_rounds') }}
),

-- A reference file delivered again (a whole new export, other bytes): each batch's round once, from the newest file.
newest as (
    {{ newest_delivery('source', ['batch_id', adapter.quote('round')]) }}
),

renamed as (
    select
        batch_id,
        round as round_number,
        started_at,
        ended_at,
        evidence,
        source_file,
        source_line
    from newest
)

select * from renamed
