-- The internal GPU-hour price per month (R8), per available and per effective GPU-hour. A month whose jobs
-- occupied owned GPUs while no owned capacity was in service has no price: it is unpriced, and its compute cost
-- is null, never 0.00.
with prices as (
    select * from {{ ref('int_gpu_hour_prices_derived') }}
),

usage as (
    select
        costs.month_start,
        sum(costs.occupied_gpu_seconds) as occupied_gpu_seconds,
        sum(costs.compute_cost) as compute_cost,
        max(case when costs.is_unpriced then 1 else 0 end) = 1 as is_unpriced
    from {{ ref('int_job_months_costed') }} as costs
    where costs.cost_source = 'owned_capacity'
    group by costs.month_start
),

-- Effective time is measured per job; a job spanning months lends each month its share of occupied time.
effective as (
    select
        costs.month_start,
        sum(case when jobs.occupied_gpu_seconds > 0
            then cast(jobs.effective_compute_gpu_seconds as double) * costs.occupied_gpu_seconds / jobs.occupied_gpu_seconds
            else 0 end) as effective_compute_gpu_seconds
    from {{ ref('int_job_months_costed') }} as costs
    inner join {{ ref('int_jobs_costed') }} as jobs on costs.job_key = jobs.job_key
    where costs.cost_source = 'owned_capacity'
    group by costs.month_start
),

joined as (
    select
        prices.*,
        coalesce(usage.occupied_gpu_seconds, 0) as occupied_gpu_seconds,
        case when not coalesce(usage.is_unpriced, false) then coalesce(usage.compute_cost, 0) end as compute_cost,
        coalesce(usage.is_unpriced, false) as is_unpriced,
        coalesce(effective.effective_compute_gpu_seconds, 0) as effective_compute_gpu_seconds
    from prices
    left join usage on prices.month_start = usage.month_start
    left join effective on prices.month_start = effective.month_start
)

select
    month_start,
    {{ latest_contract_version() }} as contract_version,
    hours_in_month,
    gpus_in_service,
    cast(available_gpu_seconds / 3600.0 as decimal(18, 4)) as available_gpu_hours,
    depreciation_cost,
    facility_cost,
    cast(round(capacity_cost_unrounded, 2) as decimal(18, 2)) as capacity_cost,
    cast(round(price_per_available_gpu_hour, 6) as decimal(18, 6)) as price_per_available_gpu_hour,
    cast(occupied_gpu_seconds / 3600.0 as decimal(18, 4)) as occupied_gpu_hours,
    cast(effective_compute_gpu_seconds / 3600.0 as decimal(18, 4)) as effective_compute_gpu_hours,
    case when occupied_gpu_seconds > 0
        then cast(round(cast(effective_compute_gpu_seconds as double) / occupied_gpu_seconds, 6) as decimal(18, 6))
    end as measured_utilization,
    case when available_gpu_seconds > 0
        then cast(round(cast(occupied_gpu_seconds as double) / available_gpu_seconds, 6) as decimal(18, 6))
    end as allocation_share,
    case when effective_compute_gpu_seconds > 0
        then cast(round(price_per_available_gpu_hour * occupied_gpu_seconds / effective_compute_gpu_seconds, 6)
            as decimal(18, 6))
    end as price_per_effective_gpu_hour,
    cast(compute_cost as decimal(18, 2)) as compute_cost,
    is_unpriced,
    {{ reporting_currency() }} as currency
from joined
