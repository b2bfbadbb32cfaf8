-- How good the cost-to-complete forecast has been (R21): per runtime point (25, 50, 75 %) and over all points
-- ('all', runtime_pct null), the back-tested forecasts of fct_forecast_backtest that could be scored, their median
-- absolute percentage error and the share whose range held the actual final compute cost.
-- The median is taken at one decimal more than the errors have, so the midpoint of two of them (282.44 and 282.45:
-- 282.445) is exact before it is rounded (282.45): DuckDB's median of a decimal keeps its scale and dropped the 5.
with scored as (
    select
        fct_forecast_backtest.*,
        cast(absolute_pct_error as decimal(18, 3)) as error_to_median
    from {{ ref('fct_forecast_backtest') }}
    where absolute_pct_error is not null
),

by_point as (
    select
        cast(runtime_pct as {{ dbt.type_string() }}) as forecast_point,
        runtime_pct,
        count(*) as forecasts,
        {{ median('error_to_median') }} as median_absolute_pct_error,
        sum(case when actual_in_range then 1 else 0 end) as actual_in_range
    from scored
    group by runtime_pct

    union all

    select
        'all' as forecast_point,
        cast(null as integer) as runtime_pct,
        count(*) as forecasts,
        {{ median('error_to_median') }} as median_absolute_pct_error,
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
