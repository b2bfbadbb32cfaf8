-- Reserved capacity (R10): the owned cluster's GPU-hours of a month that no allocation held. A month figure,
-- not a batch figure, in GPU-hours only (the money view is fct_capacity_reconciliation). Allocated hours are
-- the scheduler jobs' occupied GPU-hours in the month plus serving replicas priced at the internal GPU-hour
-- price (the replicas that run on owned GPUs).
with capacity as (
    select month_start, hours_in_month, gpus_in_service, available_gpu_seconds
    from {{ ref('int_gpu_hour_prices_monthly') }}
),

training as (
    select month_start, sum(occupied_gpu_seconds) as gpu_seconds
    from {{ ref('int_job_costs_monthly') }}
    group by month_start
),

serving as (
    select month_start, sum(internal_price_gpu_seconds) as gpu_seconds
    from {{ ref('int_serving_costs_monthly') }}
    group by month_start
),

allocated as (
    select
        capacity.*,
        coalesce(training.gpu_seconds, 0) as training_gpu_seconds,
        coalesce(serving.gpu_seconds, 0) as serving_gpu_seconds
    from capacity
    left join training on capacity.month_start = training.month_start
    left join serving on capacity.month_start = serving.month_start
)

select
    month_start,
    {{ latest_contract_version() }} as contract_version,
    hours_in_month,
    gpus_in_service,
    cast(available_gpu_seconds / 3600.0 as decimal(18, 4)) as available_gpu_hours,
    cast(training_gpu_seconds / 3600.0 as decimal(18, 4)) as allocated_training_gpu_hours,
    cast(serving_gpu_seconds / 3600.0 as decimal(18, 4)) as allocated_serving_gpu_hours,
    cast((training_gpu_seconds + serving_gpu_seconds) / 3600.0 as decimal(18, 4)) as allocated_gpu_hours,
    cast((available_gpu_seconds - training_gpu_seconds - serving_gpu_seconds) / 3600.0 as decimal(18, 4))
        as reserved_unallocated_gpu_hours
from allocated
