-- The compute of each batch x phase (R2-R7): job sums from int_jobs_costed and step figures from
-- int_training_steps_attributed, full-outer-joined so that neither jobs without steps nor steps without jobs are
-- lost. Figures stay in their source units (GPU-seconds, unrounded sums) so that fct_batch_compute can add phases
-- up; fct_phase_compute and fct_batch_compute convert to hours and work out the per-unit costs. The longest step
-- keeps its start (step_max_started_at) so that a batch can pick its longest step among its phases'.
-- A phase with any unpriced job (occupied time in a month without an internal GPU-hour price) has a null
-- compute_cost (and rerun_compute_cost if a rerun job is unpriced), never a partial sum; unpriced_gpu_seconds says
-- how much time has no price. A job is what Slurm gives a JobID: every count of jobs counts each task of a pending
-- job array (array_tasks). running_jobs counts the jobs still running: their GPU-seconds and cost are so far.
-- A phase with steps but none of the jobs that ran them (jobs = 0) has a null
-- compute_cost and rerun_compute_cost too: its compute is not known, not 0.00. counted_steps_without_job counts
-- the counted steps whose job is not in the scheduler export (wherever they are): no unit cost is made of them.
-- requested_gpu_seconds adds up the jobs whose request is known: a job without a time limit is counted in
-- jobs_without_time_limit, one whose requested GPUs are unknown (a sacct export without ReqTRES, issue 10) in
-- jobs_without_gpu_request, and neither adds anything to it (never 0 GPUs, never its allocated GPUs). When no job
-- of the phase has a known request (or the phase has steps but no job), it is null, never 0: a reader who skips the
-- counts must not read 0 requested GPU-hours (sum skips nulls and is null over none).
with jobs as (
    select * from {{ ref('int_jobs_costed') }}
),

steps as (
    select * from {{ ref('int_training_steps_attributed') }}
),

job_totals as (
    select
        batch_id,
        phase,
        sum(array_tasks) as jobs,
        sum(case when is_running then array_tasks else 0 end) as running_jobs,
        sum(case when is_failed then array_tasks else 0 end) as failed_jobs,
        sum(case when is_rerun then array_tasks else 0 end) as rerun_jobs,
        sum(case when has_phase_label then 0 else array_tasks end) as jobs_without_phase,
        sum(requested_gpu_seconds) as requested_gpu_seconds,
        sum(case when requested_gpu_seconds is null and gpus_requested is not null then array_tasks else 0 end)
            as jobs_without_time_limit,
        sum(case when gpus_requested is null then array_tasks else 0 end) as jobs_without_gpu_request,
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
    group by batch_id, phase
),

-- The longest step first; of equally long ones, the lowest step number, then the earliest.
ranked_steps as (
    select
        steps.*,
        row_number() over (
            partition by batch_id, phase order by step_seconds desc, step_number asc, started_at asc
        ) as duration_rank
    from steps
),

step_totals as (
    select
        batch_id,
        phase,
        count(*) as steps_run,
        sum(case when is_counted then 1 else 0 end) as steps_counted,
        sum(case when discarded_reason is not null then 1 else 0 end) as steps_discarded,
        sum(case when is_committed then 0 else 1 end) as steps_not_committed,
        sum(case when is_counted then coalesce(tokens, 0) else 0 end) as tokens_counted,
        sum(case when is_counted and job_key is null then 1 else 0 end) as counted_steps_without_job,
        {{ median('step_seconds') }} as step_seconds_median,
        max(step_seconds) as step_seconds_max,
        max(case when duration_rank = 1 then step_number end) as step_max_number,
        max(case when duration_rank = 1 then started_at end) as step_max_started_at
    from ranked_steps
    group by batch_id, phase
)

select
    coalesce(job_totals.batch_id, step_totals.batch_id) as batch_id,
    coalesce(job_totals.phase, step_totals.phase) as phase,
    coalesce(job_totals.jobs, 0) as jobs,
    coalesce(job_totals.running_jobs, 0) as running_jobs,
    coalesce(job_totals.failed_jobs, 0) as failed_jobs,
    coalesce(job_totals.rerun_jobs, 0) as rerun_jobs,
    coalesce(job_totals.jobs_without_phase, 0) as jobs_without_phase,
    coalesce(job_totals.jobs_without_time_limit, 0) as jobs_without_time_limit,
    coalesce(job_totals.jobs_without_gpu_request, 0) as jobs_without_gpu_request,
    job_totals.requested_gpu_seconds,
    coalesce(job_totals.occupied_gpu_seconds, 0) as occupied_gpu_seconds,
    coalesce(job_totals.effective_compute_gpu_seconds, 0) as effective_compute_gpu_seconds,
    coalesce(job_totals.comm_wait_gpu_seconds, 0) as comm_wait_gpu_seconds,
    coalesce(job_totals.idle_gpu_seconds, 0) as idle_gpu_seconds,
    coalesce(job_totals.unobserved_gpu_seconds, 0) as unobserved_gpu_seconds,
    coalesce(job_totals.failed_gpu_seconds, 0) as failed_gpu_seconds,
    coalesce(job_totals.rerun_gpu_seconds, 0) as rerun_gpu_seconds,
    coalesce(job_totals.unpriced_gpu_seconds, 0) as unpriced_gpu_seconds,
    job_totals.compute_cost,
    job_totals.rerun_compute_cost,
    coalesce(step_totals.steps_run, 0) as steps_run,
    coalesce(step_totals.steps_counted, 0) as steps_counted,
    coalesce(step_totals.steps_discarded, 0) as steps_discarded,
    coalesce(step_totals.steps_not_committed, 0) as steps_not_committed,
    coalesce(step_totals.tokens_counted, 0) as tokens_counted,
    coalesce(step_totals.counted_steps_without_job, 0) as counted_steps_without_job,
    step_totals.step_seconds_median,
    step_totals.step_seconds_max,
    step_totals.step_max_number,
    step_totals.step_max_started_at
from job_totals
full outer join step_totals
    on job_totals.batch_id = step_totals.batch_id and job_totals.phase = step_totals.phase
