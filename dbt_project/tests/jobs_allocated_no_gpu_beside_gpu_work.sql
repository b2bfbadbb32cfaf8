-- A job whose allocation holds no GPU (gpus_allocated 0, no MIG instance, shard or MPS share) on a host whose GPUs
-- worked while it alone held the host: each such job, host and the GPU time of that work, which no job claims. A
-- slurm.conf whose AccountingStorageTRES lacks gres/gpu writes an AllocTRES without GPUs for a job that held them (the
-- Hábrók capture's 2023 jobs, docs/inputs.md): the job loads as 0 GPUs and its batch's compute cost is understated.
-- The night goes on (a warning, the rows kept in the audit schema): which of the host's GPUs were the job's, and whether
-- the work was the job's at all (a process outside Slurm), the records do not say, so nothing is charged to it.
--
-- The samples are those int_device_samples_attributed leaves to no job as host_has_unallocated_gpus with host_job_key
-- naming the job: unlabelled samples of an instant at which exactly one job held the host (its node list, its run)
-- and the host reported more GPUs than it was allocated. Only samples that showed work count (a tier other than idle:
-- effective compute or communication wait): a CPU job on a GPU node whose GPUs idle beside it is an honest CPU job,
-- not a job whose GPUs went unrecorded. Samples on a host several jobs held at once (several_jobs_on_host) name no
-- one job and are not listed. GPU-hours as fct_unattributed_gpu_hours counts them: each sample to its GPU's next
-- unattributed one, capped at max_gap_factor x the interval, a day's last sample closed by its next day
-- (macros/sample_days.sql close_sample_days).
--
-- Reads int_unattributed_gpu_days (GPU-days, not samples: no scan of the device samples) and int_jobs_attributed. In
-- Dagster it is a warn-severity asset check on int_unattributed_gpu_days (meta.dagster.ref: it reads two models).
{{ config(
    severity='warn', store_failures=true, schema='audit',
    meta={'dagster': {'ref': {'name': 'int_unattributed_gpu_days'}}}
) }}
with {{ unattributed_days_closed() }},

worked as (
    select
        host_job_key,
        hostname,
        count(distinct gpu_index) as gpus_that_worked,
        cast(sum(gpu_seconds_closed) as double) / 3600 as worked_gpu_hours
    from closed_days
    where reason = 'host_has_unallocated_gpus' and tier <> 'idle'
    group by host_job_key, hostname
)

select
    jobs.job_key,
    jobs.job_id,
    jobs.cluster,
    jobs.batch_id,
    jobs.start_at,
    jobs.end_at,
    worked.hostname,
    worked.gpus_that_worked,
    worked.worked_gpu_hours
from worked
inner join {{ ref('int_jobs_attributed') }} as jobs on worked.host_job_key = jobs.job_key
where
    jobs.gpus_allocated = 0
    and coalesce(jobs.mig_instances_allocated, 0) = 0
    and coalesce(jobs.shards_allocated, 0) = 0
    and coalesce(jobs.mps_allocated, 0) = 0
