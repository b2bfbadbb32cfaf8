-- One row per scheduler job (run) with its reason codes, lineage, GPU-hours by tier and cost (R4-R6).
with jobs as (
    select * from {{ ref('int_jobs_costed') }}
)

select
    job_id,
    job_id_raw,
    scheduler,
    batch_id,
    batch_label,
    unattributed_reason,
    contract_version,
    phase,
    has_phase_label,
    run_reason,
    is_rerun,
    state,
    cancelled_by,
    termination_reason,
    termination_category,
    is_failed,
    is_repeated_same_cause,
    lineage_type,
    lineage_job_id,
    lineage_job_found,
    restarts,
    submit_at,
    start_at,
    end_at,
    gpus_requested,
    gpus_allocated,
    time_limit_seconds,
    cast(requested_gpu_seconds / 3600.0 as decimal(18, 4)) as requested_gpu_hours,
    cast(occupied_gpu_seconds / 3600.0 as decimal(18, 4)) as occupied_gpu_hours,
    cast(effective_compute_gpu_seconds / 3600.0 as decimal(18, 4)) as effective_compute_gpu_hours,
    cast(comm_wait_gpu_seconds / 3600.0 as decimal(18, 4)) as comm_wait_gpu_hours,
    cast(idle_gpu_seconds / 3600.0 as decimal(18, 4)) as idle_gpu_hours,
    cast(unobserved_gpu_seconds / 3600.0 as decimal(18, 4)) as unobserved_gpu_hours,
    samples,
    compute_cost,
    has_unpriced_month,
    {{ reporting_currency() }} as currency
from jobs
