-- Device samples in the contract's utilization tiers (R5), summed per job.
with classified as (
    select * from {{ ref('int_device_samples_tiered') }}
)

select
    job_id,
    count(*) as samples,
    sum(case when tier = 'effective_compute' then represented_seconds else 0 end) as effective_compute_gpu_seconds,
    sum(case when tier = 'comm_wait' then represented_seconds else 0 end) as comm_wait_gpu_seconds,
    sum(case when tier = 'idle' then represented_seconds else 0 end) as idle_gpu_seconds
from classified
group by job_id
