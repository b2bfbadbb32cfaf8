-- A reference file delivered again (a whole new export, other bytes): each batch's round once, from the newest file.
-- The key is in the model's meta too (raw column names): rows held after a failed test are held in every delivery
-- of their round (cost_pipeline/dbt_failures.py).
{{ config(meta={'record_key': ['batch_id', 'round']}) }}

with source as (
    select * from {{ source('raw', 'batch_rounds') }}
),

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
