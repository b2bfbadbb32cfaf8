-- Cost to complete (R21), one row per running registered batch (a job without an end: running or pending): the
-- projected final compute cost with its low/high range (int_batch_forecasts_projected, method in docs/forecast.md),
-- and the projected full cost: the compute projection plus the storage, labour and services cost to date
-- (fct_batch_costs.total_cost - compute_cost; they are not projected). projected_over_boundary: the projected
-- total's low end passes budget_cost x (1 + variance_boundary_pct / 100) - the overrun is likely before it is spent;
-- null (unknown) without a projection, a budget_cost or a variance_boundary_pct: there is no boundary to pass. A
-- budget_cost of 0.00 is a boundary of 0.00: any projected cost passes it.
-- cost_per_counted_step is null when a counted step's job is not in the scheduler export (counted_steps_without_job):
-- its compute is not in the cost so far, as in fct_batch_compute.
with forecasts as (
    select * from {{ ref('int_batch_forecasts_projected') }}
    where forecast_point = 'now'
),

costs as (
    select batch_id, total_cost, compute_cost, labour_people, labour_measured_people from {{ ref('fct_batch_costs') }}
),

batches as (
    select batch_id, budget_cost, variance_boundary_pct, max_trial_rounds from {{ ref('stg_registry__batches') }}
),

rounds as (
    select batch_id, count(*) as rounds_run from {{ ref('stg_registry__rounds') }}
    group by batch_id
),

joined as (
    select
        forecasts.*,
        costs.total_cost - costs.compute_cost as other_cost_to_date,
        costs.labour_people,
        costs.labour_measured_people,
        batches.budget_cost,
        batches.variance_boundary_pct,
        batches.max_trial_rounds,
        coalesce(rounds.rounds_run, 0) as rounds_run
    from forecasts
    inner join costs on forecasts.batch_id = costs.batch_id
    inner join batches on forecasts.batch_id = batches.batch_id
    left join rounds on forecasts.batch_id = rounds.batch_id
)

select
    batch_id,
    contract_version,
    budget_gpu_hours,
    cast(occupied_gpu_hours as decimal(18, 4)) as occupied_gpu_hours,
    cast(useful_gpu_hours as decimal(18, 4)) as useful_gpu_hours,
    cast(lost_gpu_hours as decimal(18, 4)) as lost_gpu_hours,
    case when budget_gpu_hours > 0
        then cast(round(useful_gpu_hours * 100.0 / budget_gpu_hours, 2) as decimal(18, 2))
    end as plan_progress_pct,
    cast(max_trial_rounds as bigint) as max_trial_rounds,
    cast(rounds_run as bigint) as rounds_run,
    steps_counted,
    cast(compute_cost as decimal(18, 2)) as compute_cost_to_date,
    case when steps_counted > 0 and counted_steps_without_job = 0
        then {{ cents_per_unit('compute_cost * 100', 'steps_counted', 2) }}
    end as cost_per_counted_step,
    rates_from,
    cast(round(cost_per_gpu_hour, 4) as decimal(18, 4)) as cost_per_occupied_gpu_hour,
    cast(round(loss_share, 4) as decimal(18, 4)) as loss_share,
    cast(reference_batches as bigint) as reference_batches,
    range_from,
    cast(round(plan_ratio_low, 4) as decimal(18, 4)) as plan_ratio_low,
    cast(round(plan_ratio_mid, 4) as decimal(18, 4)) as plan_ratio_mid,
    cast(round(plan_ratio_high, 4) as decimal(18, 4)) as plan_ratio_high,
    cast(projected_compute_cost_low as decimal(18, 2)) as projected_compute_cost_low,
    cast(projected_compute_cost_mid as decimal(18, 2)) as projected_compute_cost,
    cast(projected_compute_cost_high as decimal(18, 2)) as projected_compute_cost_high,
    cast(other_cost_to_date as decimal(18, 2)) as other_cost_to_date,
    cast(projected_compute_cost_low + other_cost_to_date as decimal(18, 2)) as projected_total_cost_low,
    cast(projected_compute_cost_mid + other_cost_to_date as decimal(18, 2)) as projected_total_cost,
    cast(projected_compute_cost_high + other_cost_to_date as decimal(18, 2)) as projected_total_cost_high,
    cast(budget_cost as decimal(18, 2)) as budget_cost,
    cast(variance_boundary_pct as decimal(18, 2)) as variance_boundary_pct,
    case when projected_compute_cost_low is not null and budget_cost is not null and variance_boundary_pct is not null
        then coalesce((projected_compute_cost_low + other_cost_to_date) * 100.0
            > budget_cost * (100 + variance_boundary_pct), false)
    end as projected_over_boundary,
    cast(labour_people as bigint) as labour_people,
    cast(labour_measured_people as bigint) as labour_measured_people,
    is_unpriced,
    {{ reporting_currency() }} as currency
from joined
