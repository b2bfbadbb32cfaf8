-- The internal GPU-hour price per month (R8): straight-line depreciation of owned assets over their life
-- plus the month's facility costs, over the GPU-hours the owned GPUs were available in that month. Every month from
-- the first to the last a facility cost, job, serving replica or purchase names (a month between them too): a
-- purchase names the month it enters service, or the warehouse's first month (the contract's
-- operations.first_month) if it entered service before, so that every month of the warehouse's period with
-- depreciation has its row though no job, replica or facility cost names it. A month with no owned GPU in service
-- has no price (its capacity cost, facility alone, is idle capacity: int_capacity_costs_allocated).
-- A life is depreciation_years x 365 days (docs/marts.md), whatever leap days it spans; each purchase's months take
-- its depreciation up to the month's end, rounded to the cent, less that up to the month's start, so that a
-- purchase's months add up to its price less salvage exactly.
with purchases as (
    select
        *,
        cast(purchased_on as {{ dbt.type_timestamp() }}) as in_service_from,
        cast({{ dbt.dateadd('day', 'depreciation_years * 365', 'purchased_on') }} as {{ dbt.type_timestamp() }})
            as in_service_until,
        cast(depreciation_years as {{ dbt.type_bigint() }}) * 365 * 24 * 3600 as life_seconds
    from {{ ref('stg_ledger__purchases') }}
),

facility as (
    select cost_month, sum(amount) as facility_cost
    from {{ ref('stg_ledger__facility_costs') }}
    group by cost_month
),

-- A job still running names the months up to when its export saw it running.
jobs as (
    select start_at, occupied_until_at as end_at from {{ ref('int_jobs_attributed') }}
    where start_at is not null and occupied_until_at is not null
),

replicas as (
    select started_at, ended_at from {{ ref('stg_serving__replicas') }}
),

first_month as (
    select min(month_start) as month_start
    from ({{ monthly_contract_parameter('first_month', 'is_first_month') }}) as parameters
    where contract_version = {{ latest_contract_version() }}
),

purchase_months as (
    select greatest(cast({{ dbt.date_trunc('month', 'purchases.in_service_from') }} as date), first_month.month_start)
        as month_start
    from purchases
    cross join first_month
    where purchases.in_service_until > cast(first_month.month_start as {{ dbt.type_timestamp() }})
),

months as (
    select cost_month as month_start from facility
    union
    select month_start from purchase_months
    union
    {{ months_run('jobs', 'start_at', 'end_at') }}
    union
    {{ months_run('replicas', 'started_at', 'ended_at') }}
),

month_bounds as (
    {{ month_bounds('months') }}
),

-- A purchase's seconds in service from its start to each month's start and to its end (0 before it, its whole life
-- after it): the month's seconds in service are the difference.
service_spans as (
    select
        month_bounds.month_start,
        month_bounds.month_from,
        month_bounds.month_until,
        purchases.quantity,
        purchases.gpus_per_unit,
        purchases.unit_price,
        purchases.salvage_value,
        purchases.depreciation_years,
        purchases.life_seconds,
        {{ seconds_between('purchases.in_service_from',
            'least(greatest(month_bounds.month_from, purchases.in_service_from), purchases.in_service_until)') }}
            as before_seconds,
        {{ seconds_between('purchases.in_service_from',
            'least(greatest(month_bounds.month_until, purchases.in_service_from), purchases.in_service_until)') }}
            as through_seconds
    from month_bounds
    cross join purchases
),

in_service as (
    select
        *,
        through_seconds - before_seconds as in_service_seconds
    from service_spans
),

capacity as (
    select
        month_start,
        sum(quantity * gpus_per_unit * in_service_seconds) as available_gpu_seconds,
        max(case when in_service_seconds > 0 then 1 else 0 end) as has_assets,
        sum(case when in_service_seconds > 0 then quantity * gpus_per_unit else 0 end) as gpus_in_service,
        -- Straight line: (price - salvage) spread evenly over depreciation_years x 365 days, in cents per purchase
        -- (rounded half away from zero in integer arithmetic, the same on every engine: macros/cents_per_unit.sql).
        sum({{ money_share('quantity * (unit_price - salvage_value)', 'through_seconds', 'life_seconds') }}
            - {{ money_share('quantity * (unit_price - salvage_value)', 'before_seconds', 'life_seconds') }})
            as depreciation_cost
    from in_service
    group by month_start
)

select
    month_bounds.month_start,
    cast({{ seconds_between('month_bounds.month_from', 'month_bounds.month_until') }} / 3600 as integer)
        as hours_in_month,
    cast(coalesce(capacity.gpus_in_service, 0) as integer) as gpus_in_service,
    coalesce(capacity.available_gpu_seconds, 0) as available_gpu_seconds,
    cast(round(coalesce(capacity.depreciation_cost, 0), 2) as decimal(18, 2)) as depreciation_cost,
    cast(coalesce(facility.facility_cost, 0) as decimal(18, 2)) as facility_cost,
    coalesce(capacity.depreciation_cost, 0) + coalesce(facility.facility_cost, 0) as capacity_cost_unrounded,
    case when coalesce(capacity.available_gpu_seconds, 0) > 0
        then (coalesce(capacity.depreciation_cost, 0) + coalesce(facility.facility_cost, 0))
            * 3600.0 / capacity.available_gpu_seconds
    end as price_per_available_gpu_hour
from month_bounds
left join capacity on month_bounds.month_start = capacity.month_start
left join facility on month_bounds.month_start = facility.cost_month
