with source as (
    select * from {{ source('raw', 'batch_rounds') }}
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
    from source
)

select * from renamed
