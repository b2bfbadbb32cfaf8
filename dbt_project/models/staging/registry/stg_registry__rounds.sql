-- A reference file delivered again (a whole new export, other bytes): each batch's round once, from the newest file.
-- The key is in the model's meta too (raw columns): rows held after a failed test are held in every delivery of
-- their round (cost_pipeline/dbt_failures.py). A batch id is compared case-folded (same_id), as the registry's: a
-- round of B-8 is a round of the batch the registry spells b-8, and carries the registry's spelling (the rounds of
-- a batch the registry does not name keep theirs).
{%- set record_key = [same_id('batch_id'), 'round'] %}
{{ config(meta={'record_key': record_key}) }}

with source as (
    select *, {{ same_id('batch_id') }} as batch_match from {{ source('raw', 'batch_rounds') }}
),

newest as (
    {{ newest_delivery('source', ['batch_match', adapter.quote('round')]) }}
),

renamed as (
    select
        coalesce(registered.batch_id, newest.batch_id) as batch_id,
        newest.round as round_number,
        newest.started_at,
        newest.ended_at,
        newest.evidence,
        newest.source_file,
        newest.source_line
    from newest
    left join {{ ref('stg_registry__batches') }} as registered
        on newest.batch_match = {{ same_id('registered.batch_id') }}
)

select * from renamed
