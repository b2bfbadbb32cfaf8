with source as (
    select * from {{ source('raw', 'serving_requests') }}
),

-- A request log shipped again: each request once, from the newest file.
newest as (
    {{ newest_delivery('source', ['request_id']) }}
),

renamed as (
    select
        request_id,
        requested_at,
        model,
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
        escalated_to,
        human_handoff,
        request_shape,
        source_file,
        source_line
    from newest
)

select * from renamed
