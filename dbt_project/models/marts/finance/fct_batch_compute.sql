-- The compute bill per batch (R4-R7, R11): the sum of the batch's phases (int_phase_compute_aggregated) as the
-- bill's figures (macros/compute_bill_figures.sql: GPU-hours, money to the cent, per-unit costs), with the batch's
-- contract version. A median does not add up over phases: the batch's median step is taken over all its steps.
-- Its longest step is the longest of its phases' longest steps (the same order: lowest step number, then earliest).
with phases as (
    select * from {{ ref('int_phase_compute_aggregated') }}
),

step_medians as (
    select batch_id, {{ median('step_seconds') }} as step_seconds_median
    from {{ ref('int_training_steps_attributed') }}
    group by batch_id
),

longest_steps as (
    select
        batch_id,
        step_seconds_max,
        step_max_number,
        row_number() over (
            partition by batch_id order by step_seconds_max desc, step_max_number asc, step_max_started_at asc
        ) as duration_rank
    from phases
),

totals as (
    select
        batch_id,
        sum(jobs) as jobs,
        sum(running_jobs) as running_jobs,
        sum(failed_jobs) as failed_jobs,
        sum(rerun_jobs) as rerun_jobs,
        sum(jobs_without_phase) as jobs_without_phase,
        sum(jobs_without_time_limit) as jobs_without_time_limit,
        sum(jobs_without_gpu_request) as jobs_without_gpu_request,
        sum(requested_gpu_seconds) as requested_gpu_seconds,
        sum(occupied_gpu_seconds) as occupied_gpu_seconds,
        sum(effective_compute_gpu_seconds) as effective_compute_gpu_seconds,
        sum(comm_wait_gpu_seconds) as comm_wait_gpu_seconds,
        sum(idle_gpu_seconds) as idle_gpu_seconds,
        sum(unobserved_gpu_seconds) as unobserved_gpu_seconds,
        sum(failed_gpu_seconds) as failed_gpu_seconds,
        sum(rerun_gpu_seconds) as rerun_gpu_seconds,
        sum(unpriced_gpu_seconds) as unpriced_gpu_seconds,
        -- a batch with an unpriced phase has no compute cost (null), never the sum of the priced phases; a phase
        -- with steps but no jobs adds no known cost (its null is not a price missing), and a batch with no job at
        -- all has none (null, not 0.00)
        case when sum(jobs) > 0 and count(compute_cost) = sum(case when jobs > 0 then 1 else 0 end)
            then sum(compute_cost) end as compute_cost,
        case when sum(jobs) > 0 and count(rerun_compute_cost) = sum(case when jobs > 0 then 1 else 0 end)
            then sum(rerun_compute_cost) end as rerun_compute_cost,
        sum(steps_run) as steps_run,
        sum(steps_counted) as steps_counted,
        sum(steps_discarded) as steps_discarded,
        sum(steps_not_committed) as steps_not_committed,
        sum(tokens_counted) as tokens_counted,
        sum(counted_steps_without_job) as counted_steps_without_job
    from phases
    group by batch_id
),

batch_totals as (
    select
        totals.*,
        step_medians.step_seconds_median,
        longest_steps.step_seconds_max,
        longest_steps.step_max_number
    from totals
    left join step_medians on totals.batch_id = step_medians.batch_id
    left join longest_steps on totals.batch_id = longest_steps.batch_id and longest_steps.duration_rank = 1
),

batches as (
    select batch_id, contract_version from {{ ref('dim_batches') }}
)

select
    batch_totals.batch_id,
    batches.contract_version,
    {{ compute_bill_figures('batch_totals') }},
    {{ reporting_currency() }} as currency
from batch_totals
left join batches on batch_totals.batch_id = batches.batch_id
