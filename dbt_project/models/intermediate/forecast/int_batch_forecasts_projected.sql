-- The cost-to-complete formula (R21, docs/forecast.md), applied to every progress point but 'final': the 'now' of a
-- running batch and the back-test points of a finished one. With P = budget_gpu_hours, U useful and G occupied
-- GPU-hours so far, C the compute cost so far, k the cost per occupied GPU-hour and w the share of occupied
-- GPU-hours lost to failures and reruns:
--     projected(r) = C + k x max(r x P - U, 0) / (1 - w)
-- for the plan ratios r low / mid / high. k and w are the batch's own (C / G, lost / G) once it has occupied
-- min_own_gpu_hours, else the median of the reference batches'. The reference batches are the registered batches
-- that had finished by the point (every one for 'now'), never the batch itself; their plan ratio is final useful
-- GPU-hours / budget_gpu_hours. With at least min_reference_batches of them, r low / mid / high are their
-- range_low_quantile, median and range_high_quantile; with fewer, the contract's default_plan_ratio_*. The
-- remainder is rounded once to the cent and added to the exact cost so far. No budget_gpu_hours, no price: null.
{%- set parameters = {
    'forecast_range_low_quantile': 'low_quantile',
    'forecast_range_high_quantile': 'high_quantile',
    'forecast_min_reference_batches': 'min_reference_batches',
    'forecast_default_plan_ratio_low': 'default_ratio_low',
    'forecast_default_plan_ratio': 'default_ratio_mid',
    'forecast_default_plan_ratio_high': 'default_ratio_high',
    'forecast_min_own_gpu_hours': 'min_own_gpu_hours',
    'forecast_max_loss_share': 'max_loss_share'} %}

with progress as (
    select * from {{ ref('int_batch_progress_measured') }}
),

parameters as (
    {{ contract_parameters(parameters) }}
),

targets as (
    select
        progress.*,
        {%- for column in parameters.values() %}
        parameters.{{ column }}{% if not loop.last %},{% endif %}
        {%- endfor %}
    from progress
    inner join parameters on progress.contract_version = parameters.contract_version
    where progress.forecast_point <> 'final'
),

reference as (
    select
        batch_id,
        last_end_at as finished_at,
        useful_gpu_hours / budget_gpu_hours as plan_ratio,
        compute_cost / occupied_gpu_hours as cost_per_gpu_hour,
        lost_gpu_hours / occupied_gpu_hours as loss_share
    from progress
    where forecast_point = 'final' and budget_gpu_hours > 0 and occupied_gpu_hours > 0 and not is_unpriced
),

matched as (
    select
        targets.batch_id,
        targets.forecast_point,
        targets.low_quantile,
        targets.high_quantile,
        reference.plan_ratio,
        reference.cost_per_gpu_hour,
        reference.loss_share,
        count(*) over (partition by targets.batch_id, targets.forecast_point) as reference_batches,
        row_number() over (partition by targets.batch_id, targets.forecast_point
            order by reference.plan_ratio, reference.batch_id) as ratio_rank,
        row_number() over (partition by targets.batch_id, targets.forecast_point
            order by reference.cost_per_gpu_hour, reference.batch_id) as cost_rank,
        row_number() over (partition by targets.batch_id, targets.forecast_point
            order by reference.loss_share, reference.batch_id) as loss_rank
    from targets
    inner join reference
        on reference.batch_id <> targets.batch_id
        and (targets.cut_at is null or reference.finished_at <= targets.cut_at)
),

reference_figures as (
    select
        batch_id,
        forecast_point,
        max(reference_batches) as reference_batches,
        {{ ranked_quantile('plan_ratio', 'ratio_rank', 'reference_batches', 'low_quantile') }} as ratio_low,
        {{ ranked_quantile('plan_ratio', 'ratio_rank', 'reference_batches', '0.5') }} as ratio_mid,
        {{ ranked_quantile('plan_ratio', 'ratio_rank', 'reference_batches', 'high_quantile') }} as ratio_high,
        {{ ranked_quantile('cost_per_gpu_hour', 'cost_rank', 'reference_batches', '0.5') }} as cost_per_gpu_hour,
        {{ ranked_quantile('loss_share', 'loss_rank', 'reference_batches', '0.5') }} as loss_share
    from matched
    group by batch_id, forecast_point
),

rates as (
    select
        targets.*,
        coalesce(reference_figures.reference_batches, 0) as reference_batches,
        targets.occupied_gpu_hours >= targets.min_own_gpu_hours and targets.compute_cost is not null as has_own_rates,
        coalesce(reference_figures.reference_batches, 0) >= targets.min_reference_batches as has_reference_range,
        reference_figures.ratio_low as reference_ratio_low,
        reference_figures.ratio_mid as reference_ratio_mid,
        reference_figures.ratio_high as reference_ratio_high,
        reference_figures.cost_per_gpu_hour as reference_cost_per_gpu_hour,
        reference_figures.loss_share as reference_loss_share
    from targets
    left join reference_figures
        on targets.batch_id = reference_figures.batch_id
        and targets.forecast_point = reference_figures.forecast_point
),

chosen as (
    select
        rates.*,
        case
            when has_own_rates then 'own'
            when reference_batches > 0 then 'organisation'
            when occupied_gpu_hours > 0 and compute_cost is not null then 'own'
        end as rates_from,
        case
            when has_own_rates then compute_cost / occupied_gpu_hours
            when reference_batches > 0 then reference_cost_per_gpu_hour
            when occupied_gpu_hours > 0 then compute_cost / occupied_gpu_hours
        end as cost_per_gpu_hour,
        least(case
            when has_own_rates then lost_gpu_hours / occupied_gpu_hours
            when reference_batches > 0 then reference_loss_share
            when occupied_gpu_hours > 0 then lost_gpu_hours / occupied_gpu_hours
        end, max_loss_share) as loss_share,
        case when has_reference_range then reference_ratio_low else default_ratio_low end as plan_ratio_low,
        case when has_reference_range then reference_ratio_mid else default_ratio_mid end as plan_ratio_mid,
        case when has_reference_range then reference_ratio_high else default_ratio_high end as plan_ratio_high
    from rates
)

select
    batch_id,
    contract_version,
    forecast_point,
    runtime_pct,
    cut_at,
    budget_gpu_hours,
    occupied_gpu_hours,
    useful_gpu_hours,
    lost_gpu_hours,
    steps_counted,
    counted_steps_without_job,
    compute_cost,
    is_unpriced,
    rates_from,
    cost_per_gpu_hour,
    loss_share,
    reference_batches,
    case when has_reference_range then 'reference_batches' else 'contract_defaults' end as range_from,
    plan_ratio_low,
    plan_ratio_mid,
    plan_ratio_high,
    {%- for end in ['low', 'mid', 'high'] %}
    case when budget_gpu_hours is not null and cost_per_gpu_hour is not null and compute_cost is not null
        then compute_cost + cast(round(
            cost_per_gpu_hour * greatest(plan_ratio_{{ end }} * budget_gpu_hours - useful_gpu_hours, 0)
            / (1 - loss_share), 2) as decimal(18, 2))
    end as projected_compute_cost_{{ end }}{% if not loop.last %},{% endif %}
    {%- endfor %}
from chosen
