-- Every request with its shape (contract buckets and latency tier), whether it completed, and its share of its
-- model-month's spend C by the contract's allocation key, in whole cents that add up to C exactly.
-- Requests that did not complete carry their share too: their load is part of C, and N counts completed only.
-- A request whose model-month spend is not known (a replica without a price, or no replica of the model that month)
-- is unpriced: its cost is null, never 0.00, and every sum of request costs over it is null too.
-- Incremental by month (macros/request_months.sql): R13 shares a model-month's spend over its requests, so a month
-- whose inputs changed (int_requests_inputs: a request log, held rows, a model-month's spend) is built again whole,
-- from its staged requests only, and the other months' rows are kept; every month when the contract or the code
-- changed. On Spark a table, built whole (docs/spark.md).
{{ config(
    materialized='table' if target.type == 'spark' else 'incremental',
    incremental_strategy='append',
    on_schema_change='sync_all_columns',
    pre_hook="{{ request_months_forget('int_requests_costed') }}",
    post_hook="{{ request_months_remember('int_requests_costed') }}",
) }}
-- depends_on: {{ ref('int_requests_inputs') }}
{%- set months = request_months_to_build('int_requests_costed') %}
{#- The request's weight under the contract's allocation key, read by the allocation and by the output alike. #}
{%- set allocation_weight -%}
    case when parameters.by_tokens = 1
        then requests.input_tokens * parameters.input_weight + requests.output_tokens * parameters.output_weight
        else 1
    end
{%- endset %}

with requests as (
    select * from {{ ref('stg_serving__requests') }}
    {%- if months is not none %}
    where {{ periods_where(months, 'requested_at') }}
    {%- endif %}
),

latest_contract as (
    select {{ latest_contract_version() }} as contract_version
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
    where contract_version = (select contract_version from latest_contract)
),

shaped as (
    select
        requests.request_key,
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
        {{ allocation_weight }} as allocation_weight,
        latest_contract.contract_version
    from requests
    cross join parameters
    cross join latest_contract
    {{ join_contract_enumeration('statuses', 'request_status', 'latest_contract.contract_version',
                                 code='requests.status') }}
    {{ join_contract_enumeration('input_buckets', 'input_bucket', 'latest_contract.contract_version',
                                 value='requests.input_tokens') }}
    {{ join_contract_enumeration('output_buckets', 'output_bucket', 'latest_contract.contract_version',
                                 value='requests.output_tokens') }}
    {{ join_contract_enumeration('latency_tiers', 'latency_tier', 'latest_contract.contract_version',
                                 value='requests.latency_ms') }}
),

with_spend as (
    select
        shaped.*,
        costs.serving_cost_cents as model_month_cost_cents,
        costs.model is not null as has_serving_cost,
        costs.serving_cost_cents is null as is_unpriced
    from shaped
    left join {{ ref('int_model_months_costed') }} as costs
        on shaped.month_start = costs.month_start and shaped.model = costs.model
),

-- The allocation's windows sort only the columns they need, not every request's whole row; each request (one row
-- per id and start: an id may name two requests, stg_serving__requests) then takes its cents back by its id and
-- start, a hash join. Sorting the whole rows made the model grow faster than its rows; carrying request_key (the id
-- and start as one text) through the windows as well cost a quarter of the model's time. The parts are read from the staged requests' table itself, the columns they need, not from
-- with_spend or the requests CTE: a CTE read twice was materialised whole (every column of every request) first. Only model-months whose
-- spend is known are shared out; an unpriced request finds no share.
allocation_parts as (
    select
        requests.request_id,
        requests.requested_at,
        costs.month_start,
        costs.model,
        costs.serving_cost_cents as model_month_cost_cents,
        {{ allocation_weight }} as allocation_weight
    from {{ ref('stg_serving__requests') }} as requests
    cross join parameters
    inner join {{ ref('int_model_months_costed') }} as costs
        on cast({{ dbt.date_trunc('month', 'requests.requested_at') }} as date) = costs.month_start
        and requests.model = costs.model
    where
        costs.serving_cost_cents is not null
        {%- if months is not none %}
        and {{ periods_where(months, 'requests.requested_at') }}
        {%- endif %}
),

allocated as (
    {{ largest_remainder_cents('allocation_parts', ['month_start', 'model'], 'model_month_cost_cents',
                               'allocation_weight', 'request_id, requested_at') }}
)

select
    with_spend.request_key,
    with_spend.request_id,
    with_spend.month_start,
    with_spend.requested_at,
    with_spend.model,
    with_spend.tenant,
    with_spend.business_line,
    with_spend.input_tokens,
    with_spend.output_tokens,
    with_spend.cache_hit,
    with_spend.input_bucket,
    with_spend.output_bucket,
    with_spend.latency_tier,
    with_spend.latency_ms,
    with_spend.status,
    with_spend.is_completed,
    with_spend.task_id,
    with_spend.attempt,
    with_spend.escalated_to,
    with_spend.human_handoff,
    with_spend.request_shape,
    with_spend.allocation_weight,
    with_spend.has_serving_cost,
    with_spend.is_unpriced,
    allocated.allocated_cents as request_cost_cents,
    with_spend.contract_version
from with_spend
left join allocated
    on with_spend.request_id = allocated.request_id
    and with_spend.requested_at = allocated.requested_at
