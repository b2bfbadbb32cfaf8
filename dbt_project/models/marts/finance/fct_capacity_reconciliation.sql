-- R12: per month, usage allocated at the internal price plus idle capacity = the amortised capacity cost, to the
-- cent. Training is summed from the job costs the resource book carries, serving replicas (the service book's
-- owned GPUs) and idle capacity from the allocation; unreconciled_cost other than 0.00 would show an
-- allocation that lost or invented money. Every month with owned capacity or capacity cost has its row: a month
-- with no owned GPU in service shows its facility cost as idle capacity (0 available and idle GPU-hours).
with prices as (
    select * from {{ ref('int_gpu_hour_prices_derived') }}
    where available_gpu_seconds > 0 or depreciation_cost + facility_cost <> 0
),

allocation as (
    select
        month_start,
        sum(case when part_kind = 'training_job' then gpu_seconds else 0 end) as training_gpu_seconds,
        sum(case when part_kind = 'serving_replica' then gpu_seconds else 0 end) as serving_gpu_seconds,
        sum(case when part_kind = 'idle' then gpu_seconds else 0 end) as idle_gpu_seconds,
        sum(case when part_kind = 'serving_replica' then allocated_cents else 0 end) as serving_cents,
        sum(case when part_kind = 'idle' then allocated_cents else 0 end) as idle_cents
    from {{ ref('int_capacity_costs_allocated') }}
    group by month_start
),

training as (
    select month_start, sum(compute_cost) as training_cost
    from {{ ref('int_job_months_costed') }}
    where cost_source = 'owned_capacity'
    group by month_start
),

joined as (
    select
        prices.month_start,
        prices.available_gpu_seconds,
        prices.depreciation_cost,
        prices.facility_cost,
        cast(prices.depreciation_cost + prices.facility_cost as decimal(18, 2)) as capacity_cost,
        coalesce(allocation.training_gpu_seconds, 0) as training_gpu_seconds,
        coalesce(allocation.serving_gpu_seconds, 0) as serving_gpu_seconds,
        coalesce(allocation.idle_gpu_seconds, 0) as idle_gpu_seconds,
        cast(coalesce(training.training_cost, 0) as decimal(18, 2)) as allocated_training_cost,
        cast(coalesce(allocation.serving_cents, 0) / 100.0 as decimal(18, 2))
            as allocated_serving_cost,
        cast(coalesce(allocation.idle_cents, 0) / 100.0 as decimal(18, 2)) as idle_capacity_cost
    from prices
    left join allocation on prices.month_start = allocation.month_start
    left join training on prices.month_start = training.month_start
)

select
    month_start as month,
    {{ latest_contract_version() }} as contract_version,
    cast(available_gpu_seconds / 3600.0 as decimal(18, 4)) as available_gpu_hours,
    cast(training_gpu_seconds / 3600.0 as decimal(18, 4)) as training_gpu_hours,
    cast(serving_gpu_seconds / 3600.0 as decimal(18, 4)) as serving_gpu_hours,
    cast(idle_gpu_seconds / 3600.0 as decimal(18, 4)) as idle_gpu_hours,
    training_gpu_seconds + serving_gpu_seconds > available_gpu_seconds as is_overbooked,
    depreciation_cost,
    facility_cost,
    capacity_cost,
    allocated_training_cost,
    allocated_serving_cost,
    idle_capacity_cost,
    cast(allocated_training_cost + allocated_serving_cost + idle_capacity_cost as decimal(18, 2))
        as allocated_plus_idle_cost,
    cast(capacity_cost - allocated_training_cost - allocated_serving_cost - idle_capacity_cost as decimal(18, 2))
        as unreconciled_cost,
    {{ reporting_currency() }} as currency
from joined
