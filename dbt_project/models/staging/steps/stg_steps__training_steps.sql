-- A step file shipped again: each step once; the newest delivery wins, the file that arrived later whatever its name
-- (a step discarded after the fact is restated).
-- The key is in the model's meta too: rows held after a failed test are held in every delivery of their step
-- (cost_pipeline/dbt_failures.py).
{%- set record_key = ['job_id', 'step', 'started_at'] %}
{{ config(meta={'record_key': record_key}) }}

with source as (
    select * from {{ source('raw', 'training_steps') }}
),

newest as (
    {{ newest_delivery('source', record_key) }}
),

renamed as (
    select
        batch_id,
        job_id,
        step as step_number,
        started_at,
        ended_at,
        {{ exact_seconds_between('started_at', 'ended_at') }} as step_seconds,
        committed as is_committed,
        discarded_reason,
        samples,
        tokens,
        config_version,
        data_version,
        source_file,
        source_line
    from newest
)

select * from renamed
