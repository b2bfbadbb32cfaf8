-- Failed GPU-hours per batch and termination category (R6), same-cause repeats apart from the rest.
with jobs as (
    select * from {{ ref('int_jobs_costed') }}
    where is_failed
)

select
    batch_id,
    termination_category,
    max(contract_version) as contract_version,
    count(*) as failed_jobs,
    cast(sum(case when is_repeated_same_cause then 1 else 0 end) as bigint) as repeated_same_cause_jobs,
    cast(sum(occupied_gpu_seconds) / 3600.0 as decimal(18, 4)) as failed_gpu_hours,
    cast(sum(case when is_repeated_same_cause then occupied_gpu_seconds else 0 end) / 3600.0 as decimal(18, 4))
        as repeated_same_cause_gpu_hours,
    cast(sum(compute_cost) as decimal(18, 2)) as failed_compute_cost
from jobs
group by batch_id, termination_category
