-- Every request with its shape (contract buckets and latency tier), whether it completed, and its share of its
-- model-month's spend C by the contract's allocation key, in whole cents that add up to C exactly.
-- Requests that did not complete carry their share too: their load is part of C, and N counts completed only.
with requests as (
    select * from {{ ref('stg_serving__requests') }}
),

enumerations as (
    select * from {{ ref('stg_contract__enumerations') }}
    where contract_version = {{ latest_contract_version() }}
),

parameters_by_version as (
    {{ contract_parameters({
        'serving_input_token_weight': 'input_weight',
        'serving_output_token_weight': 'output_weight',
        'serving_allocation_by_tokens': 'by_tokens',
    }) }}
),

parameters as (
    select input_weight, output_weight, by_tokens
    from parameters_by_version
    where contract_version = (select max(contract_version) from enumerations)
),

shaped as (
    select
        requests.request_id,
        cast({{ dbt.date_trunc('month', 'requests.requested_at') }} as date) as month_start,
        requests.requested_at,
        requests.model,
        requests.tenant,
        requests.business_line,
        requests.input_tokens,
        requests.output_tokens,
        requests.cache_hit,
        input_buckets.code as input_bucket,
        output_buckets.code as output_bucket,
        coalesce(requests.latency_tier, latency_tiers.code) as latency_tier,
        requests.latency_ms,
        requests.status,
        statuses.category = 'completed' as is_completed,
        requests.task_id,
        requests.attempt,
        requests.escalated_to,
        requests.human_handoff,
        requests.request_shape,
        case when parameters.by_tokens = 1
            then requests.input_tokens * parameters.input_weight + requests.output_tokens * parameters.output_weight
            else 1
        end as allocation_weight,
        enumerations_version.contract_version
    from requests
    cross join parameters
    cross join (select max(contract_version) as contract_version from enumerations) as enumerations_version
    left join enumerations as statuses
        on statuses.enumeration = 'request_status' and statuses.code = requests.status
    left join enumerations as input_buckets
        on input_buckets.enumeration = 'input_bucket'
        and requests.input_tokens >= input_buckets.lower_bound
        and (input_buckets.upper_bound is null or requests.input_tokens < input_buckets.upper_bound)
    left join enumerations as output_buckets
        on output_buckets.enumeration = 'output_bucket'
        and requests.output_tokens >= output_buckets.lower_bound
        and (output_buckets.upper_bound is null or requests.output_tokens < output_buckets.upper_bound)
    left join enumerations as latency_tiers
        on latency_tiers.enumeration = 'latency_tier'
        and requests.latency_ms >= latency_tiers.lower_bound
        and (latency_tiers.upper_bound is null or requests.latency_ms < latency_tiers.upper_bound)
),

with_spend as (
    select
        shaped.*,
        coalesce(costs.serving_cost_cents, 0) as model_month_cost_cents,
        costs.model is not null as has_serving_cost
    from shaped
    left join {{ ref('int_model_months_costed') }} as costs
        on shaped.month_start = costs.month_start and shaped.model = costs.model
),

allocated as (
    {{ largest_remainder_cents('with_spend', ['month_start', 'model'], 'model_month_cost_cents',
                               'allocation_weight', 'request_id') }}
)

select
    request_id,
    month_start,
    requested_at,
    model,
    tenant,
    business_line,
    input_tokens,
    output_tokens,
    cache_hit,
    input_bucket,
    output_bucket,
    latency_tier,
    latency_ms,
    status,
    is_completed,
    task_id,
    attempt,
    escalated_to,
    human_handoff,
    request_shape,
    allocation_weight,
    has_serving_cost,
    allocated_cents as request_cost_cents,
    contract_version
from allocated
