{#-
    The compute figures of fct_batch_compute and fct_phase_compute, at any grain (a list of column names):
    job sums from int_jobs_costed and step figures from int_training_steps_attributed, full-outer-joined so that
    neither jobs without steps nor steps without jobs are lost. A group with any unpriced job (occupied time in a
    month without an internal GPU-hour price) has a null compute_cost and the unit costs built on it, never a
    partial sum: unpriced_gpu_hours says how much time has no price.
-#}
{% macro compute_rollup(grain) %}
{%- set keys = grain | join(', ') -%}
with jobs as (
    select * from {{ ref('int_jobs_costed') }}
),

steps as (
    select * from {{ ref('int_training_steps_attributed') }}
),

job_totals as (
    select
        {{ keys }},
        count(*) as jobs,
        sum(case when is_failed then 1 else 0 end) as failed_jobs,
        sum(case when is_rerun then 1 else 0 end) as rerun_jobs,
        sum(case when has_phase_label then 0 else 1 end) as jobs_without_phase,
        sum(coalesce(requested_gpu_seconds, 0)) as requested_gpu_seconds,
        sum(case when requested_gpu_seconds is null then 1 else 0 end) as jobs_without_time_limit,
        sum(occupied_gpu_seconds) as occupied_gpu_seconds,
        sum(effective_compute_gpu_seconds) as effective_compute_gpu_seconds,
        sum(comm_wait_gpu_seconds) as comm_wait_gpu_seconds,
        sum(idle_gpu_seconds) as idle_gpu_seconds,
        sum(unobserved_gpu_seconds) as unobserved_gpu_seconds,
        sum(case when is_failed then occupied_gpu_seconds else 0 end) as failed_gpu_seconds,
        sum(case when is_rerun then occupied_gpu_seconds else 0 end) as rerun_gpu_seconds,
        sum(unpriced_gpu_seconds) as unpriced_gpu_seconds,
        case when max(case when has_unpriced_month then 1 else 0 end) = 0 then sum(compute_cost) end
            as compute_cost,
        case when max(case when is_rerun and has_unpriced_month then 1 else 0 end) = 0
            then sum(case when is_rerun then compute_cost else 0 end) end as rerun_compute_cost
    from jobs
    group by {{ keys }}
),

ranked_steps as (
    select
        steps.*,
        row_number() over (
            partition by {{ keys }} order by step_seconds desc, step_number asc, started_at asc
        ) as duration_rank
    from steps
),

step_totals as (
    select
        {{ keys }},
        count(*) as steps_run,
        sum(case when is_counted then 1 else 0 end) as steps_counted,
        sum(case when discarded_reason is not null then 1 else 0 end) as steps_discarded,
        sum(case when is_committed then 0 else 1 end) as steps_not_committed,
        sum(case when is_counted then coalesce(tokens, 0) else 0 end) as tokens_counted,
        {{ median('step_seconds') }} as step_seconds_median,
        max(step_seconds) as step_seconds_max,
        max(case when duration_rank = 1 then step_number end) as step_max_number
    from ranked_steps
    group by {{ keys }}
),

combined as (
    select
        {%- for key in grain %}
        coalesce(job_totals.{{ key }}, step_totals.{{ key }}) as {{ key }},
        {%- endfor %}
        coalesce(job_totals.jobs, 0) as jobs,
        coalesce(job_totals.failed_jobs, 0) as failed_jobs,
        coalesce(job_totals.rerun_jobs, 0) as rerun_jobs,
        coalesce(job_totals.jobs_without_phase, 0) as jobs_without_phase,
        coalesce(job_totals.jobs_without_time_limit, 0) as jobs_without_time_limit,
        coalesce(job_totals.requested_gpu_seconds, 0) as requested_gpu_seconds,
        coalesce(job_totals.occupied_gpu_seconds, 0) as occupied_gpu_seconds,
        coalesce(job_totals.effective_compute_gpu_seconds, 0) as effective_compute_gpu_seconds,
        coalesce(job_totals.comm_wait_gpu_seconds, 0) as comm_wait_gpu_seconds,
        coalesce(job_totals.idle_gpu_seconds, 0) as idle_gpu_seconds,
        coalesce(job_totals.unobserved_gpu_seconds, 0) as unobserved_gpu_seconds,
        coalesce(job_totals.failed_gpu_seconds, 0) as failed_gpu_seconds,
        coalesce(job_totals.rerun_gpu_seconds, 0) as rerun_gpu_seconds,
        coalesce(job_totals.unpriced_gpu_seconds, 0) as unpriced_gpu_seconds,
        case when job_totals.jobs is null then 0 else job_totals.compute_cost end as compute_cost,
        case when job_totals.jobs is null then 0 else job_totals.rerun_compute_cost end as rerun_compute_cost,
        coalesce(step_totals.steps_run, 0) as steps_run,
        coalesce(step_totals.steps_counted, 0) as steps_counted,
        coalesce(step_totals.steps_discarded, 0) as steps_discarded,
        coalesce(step_totals.steps_not_committed, 0) as steps_not_committed,
        coalesce(step_totals.tokens_counted, 0) as tokens_counted,
        step_totals.step_seconds_median,
        step_totals.step_seconds_max,
        step_totals.step_max_number
    from job_totals
    full outer join step_totals
        on {% for key in grain %}job_totals.{{ key }} = step_totals.{{ key }}{% if not loop.last %} and {% endif %}{% endfor %}
),

batches as (
    select batch_id, contract_version from {{ ref('dim_batches') }}
)

select
    {%- for key in grain %}
    combined.{{ key }},
    {%- endfor %}
    batches.contract_version,
    cast(combined.jobs as bigint) as jobs,
    cast(combined.failed_jobs as bigint) as failed_jobs,
    cast(combined.rerun_jobs as bigint) as rerun_jobs,
    cast(combined.jobs_without_phase as bigint) as jobs_without_phase,
    cast(combined.jobs_without_time_limit as bigint) as jobs_without_time_limit,
    cast(combined.requested_gpu_seconds / 3600.0 as decimal(18, 4)) as requested_gpu_hours,
    cast(combined.occupied_gpu_seconds / 3600.0 as decimal(18, 4)) as occupied_gpu_hours,
    cast(combined.effective_compute_gpu_seconds / 3600.0 as decimal(18, 4)) as effective_compute_gpu_hours,
    cast(combined.comm_wait_gpu_seconds / 3600.0 as decimal(18, 4)) as comm_wait_gpu_hours,
    cast(combined.idle_gpu_seconds / 3600.0 as decimal(18, 4)) as idle_gpu_hours,
    cast(combined.unobserved_gpu_seconds / 3600.0 as decimal(18, 4)) as unobserved_gpu_hours,
    cast(combined.failed_gpu_seconds / 3600.0 as decimal(18, 4)) as failed_gpu_hours,
    cast(combined.rerun_gpu_seconds / 3600.0 as decimal(18, 4)) as rerun_gpu_hours,
    cast(combined.steps_run as bigint) as steps_run,
    cast(combined.steps_counted as bigint) as steps_counted,
    cast(combined.steps_discarded as bigint) as steps_discarded,
    cast(combined.steps_not_committed as bigint) as steps_not_committed,
    cast(combined.tokens_counted as bigint) as tokens_counted,
    cast(combined.step_seconds_median as decimal(18, 3)) as step_seconds_median,
    combined.step_seconds_max,
    combined.step_max_number,
    cast(combined.compute_cost as decimal(18, 2)) as compute_cost,
    cast(combined.rerun_compute_cost as decimal(18, 2)) as rerun_compute_cost,
    case when combined.steps_counted > 0
        then cast(round(combined.compute_cost / combined.steps_counted, 4) as decimal(18, 4))
    end as cost_per_counted_step,
    case when combined.tokens_counted > 0
        then cast(round(combined.compute_cost * 1000000 / combined.tokens_counted, 4) as decimal(18, 4))
    end as cost_per_million_counted_tokens,
    case when combined.effective_compute_gpu_seconds > 0
        then cast(round(combined.compute_cost * 3600 / combined.effective_compute_gpu_seconds, 4) as decimal(18, 4))
    end as cost_per_effective_gpu_hour,
    combined.unpriced_gpu_seconds > 0 as is_unpriced,
    cast(combined.unpriced_gpu_seconds / 3600.0 as decimal(18, 4)) as unpriced_gpu_hours
from combined
left join batches on combined.batch_id = batches.batch_id
{% endmacro %}
