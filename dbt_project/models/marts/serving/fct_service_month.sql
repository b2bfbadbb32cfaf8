-- The service book (R12, R13): a model-month's serving spend C over its completed requests N.
-- N already averages over idle time, so C / N is not multiplied by utilization again.
-- A model-month with a replica that has no price (is_unpriced) has a null GPU cost, spend C, cost per request and
-- allocation to requests, never 0.00 or a partial sum; its other costs are known and shown. A month in which a
-- quarantined replica run held GPUs (its hours unknown) is unpriced too: other costs and spend C null, GPU cost known.
with costs as (
    select * from {{ ref('int_model_months_costed') }}
),

requests as (
    select
        month_start,
        model,
        count(*) as requests_total,
        sum(case when is_completed then 1 else 0 end) as requests_completed,
        sum(case when is_unpriced then 1 else 0 end) as unpriced_requests,
        {{ sum_when_known('request_cost_cents') }} as allocated_cents,
        max(contract_version) as contract_version
    from {{ ref('int_requests_costed') }}
    group by month_start, model
)

select
    costs.month_start as month,
    costs.model,
    requests.contract_version,
    cast(costs.gpu_seconds / 3600.0 as decimal(18, 4)) as gpu_hours,
    costs.uses_internal_price,
    costs.has_unpriced_replica or costs.has_quarantined_replica as is_unpriced,
    cast(costs.gpu_cost_cents / 100.0 as decimal(18, 2)) as gpu_cost,
    cast(costs.other_cost_cents / 100.0 as decimal(18, 2)) as other_cost,
    cast(costs.serving_cost_cents / 100.0 as decimal(18, 2)) as serving_cost,
    cast(coalesce(requests.requests_total, 0) as bigint) as requests_total,
    cast(coalesce(requests.requests_completed, 0) as bigint) as requests_completed,
    cast(coalesce(requests.unpriced_requests, 0) as bigint) as unpriced_requests,
    case when requests.requests_completed > 0 and costs.serving_cost_cents is not null
        then {{ cents_per_unit('costs.serving_cost_cents', 'requests.requests_completed') }}
    end as cost_per_request,
    -- A month without requests handed nothing down (0.00); one whose requests are unpriced handed down an unknown.
    cast(case when requests.model is null then 0 else requests.allocated_cents end / 100.0 as decimal(18, 2))
        as allocated_to_requests,
    {{ reporting_currency() }} as currency
from costs
left join requests on costs.month_start = requests.month_start and costs.model = requests.model
