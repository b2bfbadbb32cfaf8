-- Plan vs actual (R18), one row per registered batch: the budget baseline from the registry against the actual
-- full cost to date (fct_batch_costs.total_cost, refreshed nightly), the variance and whether it passes the
-- batch's boundary (either way: an underspend beyond it needs explaining too, once the batch has no job still
-- running - before, its actual cost is so far (running_jobs) and an overrun is what the forecast judges);
-- trial rounds against the maximum;
-- a stop signal when the last stop_signal_rounds rounds (contract) each cost more than the round before and
-- none produced new evidence, or when the cost-to-complete forecast's low end passes the boundary
-- (fct_batch_forecast.projected_over_boundary, running batches only); and the review's split of the actual cost into its classes. A batch with unpriced
-- compute (fct_batch_costs.is_unpriced) has a null actual cost, so a null variance and over_boundary (unknown, not
-- false), and a null cost for each review class holding an unpriced line - never a partial sum. A batch without a
-- plan (no budget_cost or no variance_boundary_pct in the registry) has no variance to judge: a null variance,
-- variance_pct and over_boundary too, and, while it runs, a null projected_over_boundary (and stop_signal, unless
-- a round rule raises it). A budget_cost of 0.00 is a plan: any spend is over its boundary (variance_pct is null).
with batches as (
    select * from {{ ref('stg_registry__batches') }}
),

costs as (
    select * from {{ ref('fct_batch_costs') }}
),

compute as (
    select batch_id, occupied_gpu_hours from {{ ref('fct_batch_compute') }}
),

{%- set review_classes = [('reasonable_exploration', 'exploration'),
                          ('unforeseeable_failure', 'unforeseeable_failure'),
                          ('avoidable_rework', 'avoidable_rework'),
                          ('planned_work', 'planned_work')] %}

review as (
    select
        batch_id,
        {%- for review_class, column in review_classes %}
        case when max(case when review_class = '{{ review_class }}' and is_unpriced then 1 else 0 end) = 0
            then sum(case when review_class = '{{ review_class }}' then amount else 0 end) end as {{ column }}_cost
            {%- if not loop.last %},{% endif %}
        {%- endfor %}
    from {{ ref('fct_cost_lines') }}
    group by batch_id
),

-- The people whose own cost rate is in each class's cost (measured labour; an assumed rate is the contract's, and
-- its hours are published): R20, engineering sees a class's cost only when they are three or more.
review_people as (
    select
        batch_id,
        {%- for review_class, column in review_classes %}
        count(distinct case when review_class = '{{ review_class }}' and evidence_level = 'measured'
            then person_key end) as {{ column }}_measured_people
            {%- if not loop.last %},{% endif %}
        {%- endfor %}
    from {{ ref('int_cost_lines_unioned') }}
    where cost_type = 'labour'
    group by batch_id
),

forecasts as (
    select batch_id, projected_over_boundary from {{ ref('fct_batch_forecast') }}
),

stop_rule as (
    {{ contract_parameters({'stop_signal_rounds': 'stop_signal_rounds'}) }}
),

rounds as (
    select
        batch_id,
        rising_cost_without_evidence_streak,
        count(*) over (partition by batch_id) as rounds_run,
        row_number() over (partition by batch_id order by started_at desc, round_number desc) as rounds_from_last
    from {{ ref('int_batch_rounds_costed') }}
),

-- The batch's latest round: how many rounds in a row, up to it, cost more than the one before without evidence.
round_totals as (
    select
        rounds.batch_id,
        rounds.rounds_run,
        rounds.rising_cost_without_evidence_streak as rising_without_evidence,
        cast(stop_rule.stop_signal_rounds as integer) as stop_signal_rounds
    from rounds
    inner join batches on rounds.batch_id = batches.batch_id
    inner join stop_rule on batches.contract_version = stop_rule.contract_version
    where rounds.rounds_from_last = 1
),

joined as (
    select
        batches.batch_id,
        batches.contract_version,
        batches.budget_cost,
        batches.budget_gpu_hours,
        batches.variance_boundary_pct,
        batches.max_trial_rounds,
        batches.stop_condition,
        costs.total_cost as actual_cost,
        compute.occupied_gpu_hours as actual_gpu_hours,
        costs.labour_people,
        costs.labour_measured_people,
        costs.is_unpriced,
        costs.running_jobs,
        coalesce(round_totals.rounds_run, 0) as rounds_run,
        coalesce(round_totals.rising_without_evidence, 0) as rising_without_evidence,
        round_totals.stop_signal_rounds,
        -- a running batch's forecast judges it (null when it cannot: no budget, boundary, plan GPU-hours or price);
        -- a batch not running has nothing left to project
        case when forecasts.batch_id is not null then forecasts.projected_over_boundary else false end
            as projected_over_boundary,
        case when review.batch_id is null then 0 else review.exploration_cost end as exploration_cost,
        case when review.batch_id is null then 0 else review.unforeseeable_failure_cost end
            as unforeseeable_failure_cost,
        case when review.batch_id is null then 0 else review.avoidable_rework_cost end as avoidable_rework_cost,
        case when review.batch_id is null then 0 else review.planned_work_cost end as planned_work_cost,
        {%- for _, column in review_classes %}
        coalesce(review_people.{{ column }}_measured_people, 0) as {{ column }}_measured_people
            {%- if not loop.last %},{% endif %}
        {%- endfor %}
    from batches
    inner join costs on batches.batch_id = costs.batch_id
    left join compute on batches.batch_id = compute.batch_id
    left join round_totals on batches.batch_id = round_totals.batch_id
    left join review on batches.batch_id = review.batch_id
    left join review_people on batches.batch_id = review_people.batch_id
    left join forecasts on batches.batch_id = forecasts.batch_id
)

select
    batch_id,
    contract_version,
    cast(budget_cost as decimal(18, 2)) as budget_cost,
    cast(actual_cost as decimal(18, 2)) as actual_cost,
    cast(actual_cost - budget_cost as decimal(18, 2)) as variance,
    case when budget_cost > 0
        then cast(round((actual_cost - budget_cost) * 100.0 / budget_cost, 2) as decimal(18, 2))
    end as variance_pct,
    cast(variance_boundary_pct as decimal(18, 2)) as variance_boundary_pct,
    -- a budget of 0.00 is a plan (no spend): any spend passes its boundary (0.00 x the boundary is 0.00)
    case when actual_cost is not null and budget_cost is not null and variance_boundary_pct is not null
        then coalesce((actual_cost > budget_cost or running_jobs = 0)
            and abs(actual_cost - budget_cost) * 100.0 > variance_boundary_pct * budget_cost, false)
    end as over_boundary,
    cast(budget_gpu_hours as decimal(18, 4)) as budget_gpu_hours,
    cast(coalesce(actual_gpu_hours, 0) as decimal(18, 4)) as actual_gpu_hours,
    cast(max_trial_rounds as bigint) as max_trial_rounds,
    cast(rounds_run as bigint) as rounds_run,
    coalesce(rounds_run > max_trial_rounds, false) as rounds_over_max,
    stop_condition,
    projected_over_boundary,
    -- true when a rule holds; null when none does and the forecast's cannot be judged (projected_over_boundary null)
    case
        when coalesce(stop_signal_rounds is not null and rising_without_evidence >= stop_signal_rounds, false)
            or coalesce(rounds_run > max_trial_rounds, false) or projected_over_boundary then true
        when projected_over_boundary is not null then false
    end as stop_signal,
    case
        when stop_signal_rounds is not null and rising_without_evidence >= stop_signal_rounds
            then 'cost_rising_without_new_evidence'
        when rounds_run > max_trial_rounds then 'trial_rounds_exceeded'
        when projected_over_boundary then 'projected_over_boundary'
    end as stop_reason,
    cast(exploration_cost as decimal(18, 2)) as exploration_cost,
    cast(unforeseeable_failure_cost as decimal(18, 2)) as unforeseeable_failure_cost,
    cast(avoidable_rework_cost as decimal(18, 2)) as avoidable_rework_cost,
    cast(planned_work_cost as decimal(18, 2)) as planned_work_cost,
    cast(labour_people as bigint) as labour_people,
    cast(labour_measured_people as bigint) as labour_measured_people,
    {%- for _, column in review_classes %}
    cast({{ column }}_measured_people as bigint) as {{ column }}_measured_people,
    {%- endfor %}
    is_unpriced,
    running_jobs,
    {{ reporting_currency() }} as currency
from joined
