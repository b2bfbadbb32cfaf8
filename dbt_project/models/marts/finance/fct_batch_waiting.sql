-- Waiting per batch and phase (R10): every kind of waiting in its own column, never added into one figure.
-- A job is what Slurm gives a JobID: a pending array's record counts each of its tasks still pending (array_tasks).
-- Money is the sum of per-job amounts already rounded once to the cent per job and figure (int_job_waiting_measured).
-- A job whose requested GPUs are unknown (a sacct export without ReqTRES, issue 10) is counted in
-- jobs_without_gpu_request and its queue is in no queued_gpu_hours, as a job not started yet: never 0 GPU-hours.
with waiting as (
    select * from {{ ref('int_job_waiting_measured') }}
),

batches as (
    select batch_id, contract_version from {{ ref('dim_batches') }}
),

by_phase as (
    select
        batch_id,
        phase,
        sum(array_tasks) as jobs,
        sum(case when start_at is null then array_tasks else 0 end) as jobs_not_started,
        sum(case when steps_run > 0 then array_tasks else 0 end) as jobs_with_steps,
        sum(case when gpus_requested is null then array_tasks else 0 end) as jobs_without_gpu_request,
        sum(queued_gpu_seconds) as queued_gpu_seconds,
        sum(setup_gpu_seconds) as setup_gpu_seconds,
        sum(setup_cost) as setup_cost,
        sum(data_and_sync_wait_gpu_seconds) as data_and_sync_wait_gpu_seconds,
        sum(data_and_sync_wait_cost) as data_and_sync_wait_cost,
        sum(hang_after_fault_gpu_seconds) as hang_after_fault_gpu_seconds,
        sum(hang_after_fault_cost) as hang_after_fault_cost,
        sum(tail_gpu_seconds) as tail_gpu_seconds,
        sum(tail_cost) as tail_cost,
        sum(preemption_recovery_gpu_seconds) as preemption_recovery_gpu_seconds,
        sum(preemption_recovery_cost) as preemption_recovery_cost
    from waiting
    group by batch_id, phase
)

select
    by_phase.batch_id,
    by_phase.phase,
    batches.contract_version,
    cast(by_phase.jobs as bigint) as jobs,
    cast(by_phase.jobs_not_started as bigint) as jobs_not_started,
    cast(by_phase.jobs_with_steps as bigint) as jobs_with_steps,
    cast(by_phase.jobs_without_gpu_request as bigint) as jobs_without_gpu_request,
    {%- for figure in ['queued', 'setup', 'data_and_sync_wait', 'hang_after_fault', 'tail', 'preemption_recovery'] %}
    cast(by_phase.{{ figure }}_gpu_seconds / 3600.0 as decimal(18, 4)) as {{ figure }}_gpu_hours,
    {%- if figure != 'queued' %}
    cast(by_phase.{{ figure }}_cost as decimal(18, 2)) as {{ figure }}_cost{% if not loop.last %},{% endif %}
    {%- endif %}
    {%- endfor %},
    {{ reporting_currency() }} as currency
from by_phase
left join batches on by_phase.batch_id = batches.batch_id
