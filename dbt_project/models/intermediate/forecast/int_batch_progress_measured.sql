-- A registered batch's progress as it stood at a point in time (R21), the input of every cost-to-complete forecast:
-- 'now' for a running batch (one of its jobs has no end: running or still pending), and for a finished batch (every
-- job ended) 'final' plus its back-test points at 25, 50 and 75 % of its runtime (first job start to last job end).
-- At a back-test point only what was known then counts: a job's occupied GPU-seconds and cost in proportion to the
-- part of its span before the point, its failure only once it ended, its counted steps only those that had ended.
-- Useful GPU-seconds are those of jobs that did not fail and are not reruns, plus failure_retry reruns (a retry
-- redoes the failed job's work, which is already counted as lost; a restart without a run reason is one, its
-- rerun_reason); lost is the rest. counted_steps_without_job counts the counted steps whose job is not in the
-- scheduler export (as int_phase_compute_aggregated does): their compute is not in compute_cost, so no cost per
-- counted step is made of them.
with registry as (
    select batch_id, contract_version, budget_gpu_hours from {{ ref('stg_registry__batches') }}
),

jobs as (
    select
        job_id,
        batch_id,
        start_at,
        end_at,
        occupied_gpu_seconds,
        compute_cost,
        has_unpriced_month,
        is_failed,
        is_rerun and rerun_reason <> 'failure_retry' as is_lost_rerun
    from {{ ref('int_jobs_costed') }}
),

steps as (
    select batch_id, ended_at, job_key from {{ ref('int_training_steps_attributed') }}
    where is_counted
),

spans as (
    select
        registry.batch_id,
        min(jobs.start_at) as first_start_at,
        max(jobs.end_at) as last_end_at,
        sum(case when jobs.end_at is null then 1 else 0 end) as jobs_not_ended
    from registry
    inner join jobs on registry.batch_id = jobs.batch_id
    group by registry.batch_id
),

points as (
    select batch_id, 'now' as forecast_point, cast(null as integer) as runtime_pct,
        cast(null as {{ dbt.type_timestamp() }}) as cut_at
    from spans
    where jobs_not_ended > 0

    union all

    select batch_id, 'final' as forecast_point, cast(null as integer) as runtime_pct,
        cast(null as {{ dbt.type_timestamp() }}) as cut_at
    from spans
    where jobs_not_ended = 0 and last_end_at is not null
    {%- for pct in [25, 50, 75] %}

    union all

    select
        batch_id,
        'runtime_{{ pct }}_pct' as forecast_point,
        {{ pct }} as runtime_pct,
        cast({{ dbt.dateadd('second',
                            'cast(' ~ seconds_between('first_start_at', 'last_end_at') ~ ' * ' ~ pct ~ ' / 100 as integer)',
                            'first_start_at') }} as {{ dbt.type_timestamp() }}) as cut_at
    from spans
    where jobs_not_ended = 0 and last_end_at is not null
    {%- endfor %}
),

seen as (
    select
        points.batch_id,
        points.forecast_point,
        points.runtime_pct,
        points.cut_at,
        jobs.occupied_gpu_seconds,
        jobs.compute_cost,
        jobs.has_unpriced_month,
        jobs.is_lost_rerun or (jobs.is_failed and (points.cut_at is null or jobs.end_at <= points.cut_at))
            as is_lost,
        case
            when points.cut_at is null then 1.0
            when jobs.start_at is null or jobs.start_at >= points.cut_at then 0.0
            when jobs.end_at <= points.cut_at then 1.0
            else 1.0 * {{ seconds_between('jobs.start_at', 'points.cut_at') }}
                / {{ seconds_between('jobs.start_at', 'jobs.end_at') }}
        end as seen_share
    from points
    inner join jobs on points.batch_id = jobs.batch_id
),

progress as (
    select
        batch_id,
        forecast_point,
        runtime_pct,
        cut_at,
        sum(occupied_gpu_seconds * seen_share) as occupied_gpu_seconds,
        sum(case when is_lost then occupied_gpu_seconds * seen_share else 0 end) as lost_gpu_seconds,
        -- exact at 'now' and 'final' (every share is 1); a back-test point pro-rates a job running across it
        sum(case when seen_share = 1 then compute_cost else 0 end) as whole_jobs_cost,
        sum(case when seen_share > 0 and seen_share < 1 then compute_cost * seen_share else 0 end)
            as partial_jobs_cost,
        max(case when seen_share > 0 and has_unpriced_month then 1 else 0 end) = 1 as is_unpriced
    from seen
    group by batch_id, forecast_point, runtime_pct, cut_at
),

counted_steps as (
    select
        points.batch_id,
        points.forecast_point,
        count(steps.ended_at) as steps_counted,
        count(case when steps.job_key is null then steps.ended_at end) as counted_steps_without_job
    from points
    left join steps
        on points.batch_id = steps.batch_id
        and (points.cut_at is null or steps.ended_at <= points.cut_at)
    group by points.batch_id, points.forecast_point
)

select
    progress.batch_id,
    registry.contract_version,
    progress.forecast_point,
    progress.runtime_pct,
    progress.cut_at,
    spans.first_start_at,
    spans.last_end_at,
    cast(registry.budget_gpu_hours as decimal(18, 4)) as budget_gpu_hours,
    cast(progress.occupied_gpu_seconds as double) / 3600 as occupied_gpu_hours,
    cast(progress.lost_gpu_seconds as double) / 3600 as lost_gpu_hours,
    cast(progress.occupied_gpu_seconds - progress.lost_gpu_seconds as double) / 3600 as useful_gpu_hours,
    case when not progress.is_unpriced
        then progress.whole_jobs_cost + cast(round(progress.partial_jobs_cost, 2) as decimal(18, 2))
    end as compute_cost,
    progress.is_unpriced,
    cast(counted_steps.steps_counted as bigint) as steps_counted,
    cast(counted_steps.counted_steps_without_job as bigint) as counted_steps_without_job
from progress
inner join registry on progress.batch_id = registry.batch_id
inner join spans on progress.batch_id = spans.batch_id
left join counted_steps
    on progress.batch_id = counted_steps.batch_id
    and progress.forecast_point = counted_steps.forecast_point
