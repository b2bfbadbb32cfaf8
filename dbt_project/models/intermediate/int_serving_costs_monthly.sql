-- The month's serving spend C per model (R13): replica GPU-hours x price (the replica's agreed price, or the
-- internal GPU-hour price of that month when blank) plus the month's other serving costs, shared among
-- models by GPU-hours to the cent. Money is held in integer cents.
with replicas as (
    select * from {{ ref('stg_serving__replicas') }}
),

months as (
    select distinct cast({{ dbt.date_trunc('month', 'requested_at') }} as date) as month_start
    from {{ ref('stg_serving__requests') }}
    union
    select cost_month from {{ ref('stg_serving__monthly_costs') }}
    union
    select cast({{ dbt.date_trunc('month', 'started_at') }} as date) from replicas
    union
    select cast({{ dbt.date_trunc('month', 'ended_at') }} as date) from replicas
),

month_bounds as (
    select
        month_start,
        cast(month_start as {{ dbt.type_timestamp() }}) as month_from,
        cast({{ dbt.dateadd('month', 1, 'month_start') }} as {{ dbt.type_timestamp() }}) as month_until
    from months
),

internal_prices as (
    select month_start, price_per_available_gpu_hour from {{ ref('int_gpu_hour_prices_monthly') }}
),

replica_months as (
    select
        month_bounds.month_start,
        replicas.replica_id,
        replicas.model,
        replicas.gpus * {{ seconds_between(
            'greatest(replicas.started_at, month_bounds.month_from)',
            'least(replicas.ended_at, month_bounds.month_until)') }} as gpu_seconds,
        replicas.gpu_hour_price is null as uses_internal_price,
        coalesce(replicas.gpu_hour_price, internal_prices.price_per_available_gpu_hour) as gpu_hour_price
    from replicas
    inner join month_bounds
        on replicas.started_at < month_bounds.month_until
        and replicas.ended_at > month_bounds.month_from
    left join internal_prices on month_bounds.month_start = internal_prices.month_start
),

model_months as (
    select
        month_start,
        model,
        cast(sum(gpu_seconds) as bigint) as gpu_seconds,
        cast(sum(case when uses_internal_price then gpu_seconds else 0 end) as bigint) as internal_price_gpu_seconds,
        cast(sum(cast(round(gpu_seconds * gpu_hour_price / 36.0, 0) as bigint)) as bigint) as gpu_cost_cents,
        max(case when uses_internal_price then 1 else 0 end) = 1 as uses_internal_price,
        max(case when gpu_hour_price is null then 1 else 0 end) = 1 as has_unpriced_replica
    from replica_months
    group by month_start, model
),

other_costs as (
    select cost_month as month_start, cast(round(sum(amount) * 100, 0) as bigint) as other_cost_cents
    from {{ ref('stg_serving__monthly_costs') }}
    group by cost_month
),

to_share as (
    select
        model_months.*,
        coalesce(other_costs.other_cost_cents, 0) as month_other_cost_cents
    from model_months
    left join other_costs on model_months.month_start = other_costs.month_start
),

shared as (
    {{ largest_remainder_cents('to_share', ['month_start'], 'month_other_cost_cents', 'gpu_seconds', 'model') }}
)

select
    month_start,
    model,
    gpu_seconds,
    internal_price_gpu_seconds,
    uses_internal_price,
    has_unpriced_replica,
    gpu_cost_cents,
    allocated_cents as other_cost_cents,
    cast(gpu_cost_cents + allocated_cents as bigint) as serving_cost_cents
from shared
