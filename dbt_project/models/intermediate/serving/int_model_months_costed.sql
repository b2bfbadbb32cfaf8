-- The month's serving spend C per model (R13): replica GPU-hours x price (the replica's agreed price, or its
-- share of the month's owned capacity cost when blank) plus the month's other serving costs, shared among
-- models by GPU-hours to the cent. Money is held in integer cents. A model-month with a replica that has no price
-- (has_unpriced_replica) has a null GPU cost and spend C, never 0.00 or the sum of its priced replicas: its share
-- of the other costs is known and still taken by its GPU-hours, so the other models' shares do not change.
-- A month in which a quarantined replica run held GPUs (has_quarantined_replica, int_replica_runs_quarantined: a
-- blank ended_at, say) lacks that run's GPU-hours: how its other costs share out is unknown, so every model's share
-- and spend C that month is null, never the whole of them shared over the runs that were staged (a bad row moved
-- assistant-small's 1,100.00 onto assistant-large). The GPU costs of the staged runs are known and kept. A month
-- whose only runs were quarantined has no row: its other costs are unknown, not shared, and its requests unpriced.
-- A replicas file refused whole is a run of unknown months: every month (quarantined_run_in_month).
with replica_months as (
    select * from {{ ref('int_replica_months_split') }}
),

allocation as (
    select month_start, part_id as replica_key, allocated_cents
    from {{ ref('int_capacity_costs_allocated') }}
    where part_kind = 'serving_replica'
),

-- An agreed price is rounded to the cent once per replica-month; the internal price is the replica-month's
-- share of owned capacity cost (int_capacity_costs_allocated), null when the month has no owned capacity.
replica_costs as (
    select
        replica_months.month_start,
        replica_months.model,
        replica_months.gpu_seconds,
        replica_months.uses_internal_price,
        case when replica_months.uses_internal_price then allocation.allocated_cents
            else cast(round(replica_months.gpu_seconds * replica_months.agreed_gpu_hour_price / 36.0, 0) as bigint)
        end as gpu_cost_cents
    from replica_months
    left join allocation
        on replica_months.month_start = allocation.month_start
        and replica_months.replica_key = allocation.replica_key
),

model_months as (
    select
        month_start,
        model,
        cast(sum(gpu_seconds) as bigint) as gpu_seconds,
        cast({{ sum_when_known('gpu_cost_cents') }} as bigint) as gpu_cost_cents,
        max(case when uses_internal_price then 1 else 0 end) = 1 as uses_internal_price,
        max(case when gpu_cost_cents is null then 1 else 0 end) = 1 as has_unpriced_replica
    from replica_costs
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
),

quarantined_months as (
    select distinct model_months.month_start
    from model_months
    inner join {{ ref('int_replica_runs_quarantined') }} as runs
        on {{ quarantined_run_in_month('runs', 'model_months.month_start') }}
)

select
    shared.month_start,
    shared.model,
    shared.gpu_seconds,
    shared.uses_internal_price,
    shared.has_unpriced_replica,
    quarantined_months.month_start is not null as has_quarantined_replica,
    shared.gpu_cost_cents,
    case when quarantined_months.month_start is null then shared.allocated_cents end as other_cost_cents,
    case when quarantined_months.month_start is null
        then cast(shared.gpu_cost_cents + shared.allocated_cents as bigint)
    end as serving_cost_cents
from shared
left join quarantined_months on shared.month_start = quarantined_months.month_start
