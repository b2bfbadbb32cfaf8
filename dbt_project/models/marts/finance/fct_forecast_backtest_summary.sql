-- How good the cost-to-complete forecast has been (R21): per runtime point (25, 50, 75 %) and over all points
-- ('all', runtime_pct null), the back-tested forecasts of fct_forecast_backtest that could be scored, their median
-- absolute percentage error and the share whose range held the actual final compute cost.
with scored as (
    select * from {{ ref('fct_forecast_backtest') }}
    where absolute_pct_error is not null
),

by_point as (
    select
        cast(runtime_pct as {{ dbt.type_string() }}) as forecast_point,
        runtime_pct,
        count(*) as forecasts,
        {{ median('absolute_pct_error') }} as median_absolute_pct_error,
        sum(case when actual_in_range then 1 else 0 end) as actual_in_range
    from scored
    group by runtime_pct

    union all

    select
        'all' as forecast_point,
        cast(null as integer) as runtime_pct,
        count(*) as forecasts,
        {{ median('absolute_pct_error') }} as median_absolute_pct_error,
        sum(case when actual_in_range then 1 else 0 end) as actual_in_range
    from scored
)

select
    forecast_point,
    {{ latest_contract_version() }} as contract_version,
    cast(runtime_pct as integer) as runtime_pct,
    cast(forecasts as bigint) as forecasts,
    cast(round(median_absolute_pct_error, 2) as decimal(18, 2)) as median_absolute_pct_error,
    cast(actual_in_range as bigint) as actual_in_range,
    case when forecasts > 0
        then cast(round(actual_in_range * 100.0 / forecasts, 2) as decimal(18, 2))
    end as actual_in_range_pct
from by_point
