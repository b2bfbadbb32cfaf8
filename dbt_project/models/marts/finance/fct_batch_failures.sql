-- Failed GPU-hours per batch and termination category (R6), same-cause repeats apart from the rest. A group with an
-- unpriced failed job (occupied time without an internal GPU-hour price) has a null failed_compute_cost, is_unpriced
-- and unpriced_gpu_hours - never 0 or the sum of its priced jobs. A job is what Slurm gives a JobID: a pending
-- array's record (one cancelled before its tasks ran) counts each of its tasks (array_tasks).
with jobs as (
    select * from {{ ref('int_jobs_costed') }}
    where is_failed
)

select
    batch_id,
    termination_category,
    max(contract_version) as contract_version,
    cast(sum(array_tasks) as bigint) as failed_jobs,
    cast(sum(case when is_repeated_same_cause then array_tasks else 0 end) as bigint) as repeated_same_cause_jobs,
    cast(sum(occupied_gpu_seconds) / 3600.0 as decimal(18, 4)) as failed_gpu_hours,
    cast(sum(case when is_repeated_same_cause then occupied_gpu_seconds else 0 end) / 3600.0 as decimal(18, 4))
        as repeated_same_cause_gpu_hours,
    case when max(case when has_unpriced_month then 1 else 0 end) = 0
        then cast(sum(compute_cost) as decimal(18, 2)) end as failed_compute_cost,
    max(case when has_unpriced_month then 1 else 0 end) = 1 as is_unpriced,
    cast(sum(unpriced_gpu_seconds) / 3600.0 as decimal(18, 4)) as unpriced_gpu_hours,
    {{ reporting_currency() }} as currency
from jobs
group by batch_id, termination_category
