-- Serving cost allocated to tenants and business lines (R15). Training cost is never allocated this way.
-- A row with an unpriced request (its model-month spend is not known) has a null serving cost, never a partial sum,
-- and counts its unpriced requests.
select
    month_start as month,
    tenant,
    business_line,
    model,
    max(contract_version) as contract_version,
    cast(sum(case when is_completed then 1 else 0 end) as bigint) as requests_completed,
    cast(count(*) as bigint) as requests_total,
    cast(sum(case when is_unpriced then 1 else 0 end) as bigint) as unpriced_requests,
    cast(sum(input_tokens) as bigint) as input_tokens,
    cast(sum(output_tokens) as bigint) as output_tokens,
    cast({{ sum_when_known('request_cost_cents') }} / 100.0 as decimal(18, 2)) as serving_cost,
    {{ reporting_currency() }} as currency
from {{ ref('int_requests_costed') }}
group by month_start, tenant, business_line, model
