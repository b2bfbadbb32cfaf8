-- A request log shipped again: each request once, from the newest file. The key is in the model's meta too: rows
-- held after a failed test are held in every delivery of their record (cost_pipeline/dbt_failures.py). Stored, not
-- a view: a night brings millions of requests, and its five tests and int_requests_costed would each compute the
-- newest delivery of every request again.
-- A request is its id compared case-folded (same_id) and its start: a log re-shipped with its ids in another case
-- is the same requests (both counted doubled the completed requests), and two logs whose providers reuse an id
-- (sequential ids such as chatcmpl-213, LiteLLM issue 28376) for requests made at other times are two requests,
-- both counted (the newer delivery took the older one's place, silently). docs/inputs.md says why the start.
-- Incremental by month (macros/request_months.sql): a request's month is fixed by its requested_at, part of its key,
-- so every delivery of a request lies in its month; a night builds again only the months int_requests_inputs says
-- changed (a request log new, changed, gone, retracted, or held from or released), from their raw rows only, and
-- keeps the other months' rows. On Spark a table, built whole (docs/spark.md).
{%- set record_key = [same_id('request_id'), 'requested_at'] %}
{{ config(
    materialized='table' if target.type == 'spark' else 'incremental',
    incremental_strategy='append',
    on_schema_change='sync_all_columns',
    meta={'record_key': record_key},
    pre_hook="{{ request_months_forget('stg_serving__requests') }}",
    post_hook="{{ request_months_remember('stg_serving__requests') }}",
) }}
-- depends_on: {{ ref('int_requests_inputs') }}
{%- set months = request_months_to_build('stg_serving__requests') %}

-- The raw table itself is ranked, not a CTE over it: DuckDB materialised such a CTE (every column of every request)
-- for the macro's three reads, where reading the table three times scans only the columns each read needs. In an
-- incremental build each read is of the months built, their bounds as constants.
with newest as (
    {%- if months is none %}
    {{ newest_delivery(source('raw', 'serving_requests'), record_key) }}
    {%- else %}
    {{ newest_delivery(
        '(select * from ' ~ source('raw', 'serving_requests') ~ ' where ' ~ periods_where(months, 'requested_at')
        ~ ')', record_key) }}
    {%- endif %}
),

renamed as (
    select
        {{ dbt.concat(['request_id', "'@'", dbt.cast('requested_at', dbt.type_string())]) }} as request_key,
        request_id,
        requested_at,
        {{ model_name('model') }} as model,
        coalesce(tenant, 'unassigned') as tenant,
        coalesce(business_line, 'unassigned') as business_line,
        input_tokens,
        output_tokens,
        cache_hit,
        latency_ms,
        latency_tier,
        status,
        task_id,
        attempt,
        {{ model_name('escalated_to') }} as escalated_to,
        human_handoff,
        request_shape,
        source_file,
        source_line
    from newest
)

select * from renamed
