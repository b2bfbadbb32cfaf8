-- The cost-to-complete back-test (R21), one row per finished registered batch and runtime point (25, 50, 75 %):
-- the forecast the method (int_batch_forecasts_projected) would have made from what was known at that point,
-- against the batch's actual final compute cost. absolute_pct_error = |projected - actual| / actual x 100;
-- actual_in_range when projected_compute_cost_low <= actual <= projected_compute_cost_high.
with forecasts as (
    select * from {{ ref('int_batch_forecasts_projected') }}
    where runtime_pct is not null
),

actuals as (
    select batch_id, compute_cost as actual_compute_cost
    from {{ ref('int_batch_progress_measured') }}
    where forecast_point = 'final'
)

select
    forecasts.batch_id,
    forecasts.contract_version,
    cast(forecasts.runtime_pct as integer) as runtime_pct,
    forecasts.cut_at,
    cast(forecasts.compute_cost as decimal(18, 2)) as compute_cost_at_point,
    forecasts.rates_from,
    cast(forecasts.reference_batches as bigint) as reference_batches,
    forecasts.range_from,
    cast(forecasts.projected_compute_cost_low as decimal(18, 2)) as projected_compute_cost_low,
    cast(forecasts.projected_compute_cost_mid as decimal(18, 2)) as projected_compute_cost,
    cast(forecasts.projected_compute_cost_high as decimal(18, 2)) as projected_compute_cost_high,
    cast(actuals.actual_compute_cost as decimal(18, 2)) as actual_compute_cost,
    case when actuals.actual_compute_cost > 0 and forecasts.projected_compute_cost_mid is not null
        then cast(round(cast(abs(forecasts.projected_compute_cost_mid - actuals.actual_compute_cost) * 100 as double)
            / actuals.actual_compute_cost, 2) as decimal(18, 2))
    end as absolute_pct_error,
    case when forecasts.projected_compute_cost_low is not null and actuals.actual_compute_cost is not null
        then forecasts.projected_compute_cost_low <= actuals.actual_compute_cost
            and actuals.actual_compute_cost <= forecasts.projected_compute_cost_high
    end as actual_in_range,
    {{ reporting_currency() }} as currency
from forecasts
inner join actuals on forecasts.batch_id = actuals.batch_id
