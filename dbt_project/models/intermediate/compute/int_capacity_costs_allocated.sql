-- The amortised capacity cost of each month (depreciation + facility, R8) allocated to the cent (R12) over
-- everything that used the owned GPUs - training job-months and serving replica-months at the internal
-- price - plus the month's idle capacity, by GPU-seconds, with largest remainders. The parts of a month sum
-- to its capacity cost exactly. Usage beyond the available GPU-seconds (overbooking) leaves no idle part and
-- spreads the cost over the usage. A month with capacity cost but no owned GPU in service (facility costs paid
-- before the first purchase or after the last is fully depreciated) has no price: no usage takes a share (its jobs
-- are unpriced, int_job_months_costed), and all of its cost is idle capacity, with 0 GPU-seconds.
with prices as (
    select
        month_start,
        available_gpu_seconds,
        cast((depreciation_cost + facility_cost) * 100 as bigint) as capacity_cost_cents
    from {{ ref('int_gpu_hour_prices_derived') }}
    where available_gpu_seconds > 0 or depreciation_cost + facility_cost <> 0
),

usage as (
    select
        month_start,
        'training_job' as part_kind,
        job_key as part_id,
        batch_id,
        phase,
        cast(null as {{ dbt.type_string() }}) as model,
        occupied_gpu_seconds as gpu_seconds
    from {{ ref('int_job_months_split') }}
    where not is_cloud
    union all
    select
        month_start,
        'serving_replica' as part_kind,
        replica_key as part_id,
        cast(null as {{ dbt.type_string() }}) as batch_id,
        cast(null as {{ dbt.type_string() }}) as phase,
        model,
        gpu_seconds
    from {{ ref('int_replica_months_split') }}
    where uses_internal_price
),

priced_usage as (
    select usage.*
    from usage
    inner join prices on usage.month_start = prices.month_start
    where prices.available_gpu_seconds > 0
),

idle as (
    select
        prices.month_start,
        'idle' as part_kind,
        'idle' as part_id,
        cast(null as {{ dbt.type_string() }}) as batch_id,
        cast(null as {{ dbt.type_string() }}) as phase,
        cast(null as {{ dbt.type_string() }}) as model,
        case when prices.available_gpu_seconds > coalesce(sum(priced_usage.gpu_seconds), 0)
            then prices.available_gpu_seconds - coalesce(sum(priced_usage.gpu_seconds), 0)
            else 0 end as gpu_seconds
    from prices
    left join priced_usage on prices.month_start = priced_usage.month_start
    group by prices.month_start, prices.available_gpu_seconds
),

parts as (
    select
        parts.*,
        prices.capacity_cost_cents
    from (
        select * from priced_usage
        union all
        select * from idle
    ) as parts
    inner join prices on parts.month_start = prices.month_start
),

allocated as (
    {{ largest_remainder_cents('parts', ['month_start'], 'capacity_cost_cents', 'gpu_seconds', 'part_kind, part_id') }}
)

select
    month_start,
    part_kind,
    part_id,
    batch_id,
    phase,
    model,
    cast(gpu_seconds as bigint) as gpu_seconds,
    capacity_cost_cents,
    allocated_cents
from allocated
