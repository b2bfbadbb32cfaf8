-- Cost per request by request shape (R13): input-length bucket x output-length bucket x cache hit x latency
-- tier. A group's cost is the sum of its requests' shares of C, so the groups of a model-month add up to C.
-- A group with an unpriced request (its model-month spend is not known) has a null cost, never a partial sum, and
-- counts its unpriced requests.
with request_groups as (
    select
        month_start,
        model,
        input_bucket,
        output_bucket,
        cache_hit,
        latency_tier,
        max(contract_version) as contract_version,
        sum(case when is_completed then 1 else 0 end) as requests,
        sum(case when is_completed then 0 else 1 end) as requests_not_completed,
        sum(case when is_unpriced then 1 else 0 end) as unpriced_requests,
        {{ sum_when_known('request_cost_cents') }} as group_cost_cents
    from {{ ref('int_requests_costed') }}
    group by month_start, model, input_bucket, output_bucket, cache_hit, latency_tier
)

select
    month_start as month,
    model,
    input_bucket,
    output_bucket,
    cache_hit,
    latency_tier,
    contract_version,
    cast(requests as bigint) as requests,
    cast(requests_not_completed as bigint) as requests_not_completed,
    cast(unpriced_requests as bigint) as unpriced_requests,
    cast(group_cost_cents / 100.0 as decimal(18, 2)) as group_cost,
    case when requests > 0 and group_cost_cents is not null
        then {{ cents_per_unit('group_cost_cents', 'requests') }}
    end as cost_per_request,
    {{ reporting_currency() }} as currency
from request_groups
