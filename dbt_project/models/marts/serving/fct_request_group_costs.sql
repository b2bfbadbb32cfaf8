-- Cost per request by request shape (R13): input-length bucket x output-length bucket x cache hit x latency
-- tier. A group's cost is the sum of its requests' shares of C, so the groups of a model-month add up to C.
select
    month_start as month,
    model,
    input_bucket,
    output_bucket,
    cache_hit,
    latency_tier,
    max(contract_version) as contract_version,
    cast(sum(case when is_completed then 1 else 0 end) as bigint) as requests,
    cast(sum(case when is_completed then 0 else 1 end) as bigint) as requests_not_completed,
    cast(sum(request_cost_cents) / 100.0 as decimal(18, 2)) as group_cost,
    case when sum(case when is_completed then 1 else 0 end) > 0
        then {{ cents_per_unit('sum(request_cost_cents)', 'sum(case when is_completed then 1 else 0 end)') }}
    end as cost_per_request,
    {{ reporting_currency() }} as currency
from {{ ref('int_requests_costed') }}
group by month_start, model, input_bucket, output_bucket, cache_hit, latency_tier
