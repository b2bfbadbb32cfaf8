-- Device samples in the contract's utilization tiers (R5), summed per job in GPU-seconds (a MIG instance's share); and the idle time after the job's last
-- step (the hang after a fault, R10), so that the largest table is read once a night.
with classified as (
    select * from {{ ref('int_device_samples_tiered') }}
),

step_spans as (
    select job_key, last_step_end_at from {{ ref('int_job_steps_aggregated') }}
)

select
    classified.job_key,
    count(*) as samples,
    sum(case when classified.tier = 'effective_compute' then classified.represented_gpu_seconds else 0 end)
        as effective_compute_gpu_seconds,
    sum(case when classified.tier = 'comm_wait' then classified.represented_gpu_seconds else 0 end)
        as comm_wait_gpu_seconds,
    sum(case when classified.tier = 'idle' then classified.represented_gpu_seconds else 0 end) as idle_gpu_seconds,
    -- Samples taken at or after the last step's end; 0 for a job without step records.
    sum(case when classified.tier = 'idle' and classified.sampled_at >= step_spans.last_step_end_at
        then classified.represented_gpu_seconds else 0 end) as idle_after_last_step_gpu_seconds
from classified
left join step_spans on classified.job_key = step_spans.job_key
group by classified.job_key
