-- Every device sample with the job (job_key) it is attributed to, and how (R5). A sample whose job label names a
-- JobID or raw id belongs to the job that held that id at the sample time (held_by_alias: a JobID reused after a
-- controller reset or on another cluster names another job at another time), when that job's run interval
-- [start, end) holds the sample time. A sample without a job
-- label belongs to the Slurm allocation whose node list held its host at that time, when exactly one did (an
-- exclusive node) and it held whole GPUs: a MIG instance's sample, or a sample on the node of a job holding only a
-- share of a GPU (MIG instances, Slurm shards), needs its job label, since the node's other GPUs or instances may
-- be nobody's (fractional_gpu_without_job_label). Every other sample is GPU time no job claims, with the reason:
-- fct_unattributed_gpu_hours shows it. Hosts match by short name (node-01 and node-01.cluster.example are one host).
-- A view: int_device_samples_tiered reads the attributed samples, fct_unattributed_gpu_hours the rest.
{{ config(materialized='view') }}

with samples as (
    select * from {{ ref('stg_telemetry__device_samples') }}
),

jobs as (
    select
        job_key,
        start_at,
        end_at,
        mig_instances_allocated > 0 or shards_allocated > 0 or mps_allocated > 0 as holds_gpu_share
    from {{ ref('int_jobs_attributed') }}
    where start_at is not null and end_at is not null
),

job_aliases as (
    select * from {{ ref('int_job_aliases_resolved') }}
),

allocations as (
    select job_key, node_list
    from {{ ref('stg_scheduler__sacct_jobs') }}
    where record_type = 'allocation' and node_list is not null
),

allocation_hosts as (
    {{ expand_hostlist('allocations', ['job_key'], 'node_list') }}
),

-- The jobs that held each host, with their run intervals (a job named twice by its node list counts once).
host_jobs as (
    select distinct
        lower(split_part(allocation_hosts.hostname, '.', 1)) as host,
        jobs.job_key,
        jobs.start_at,
        jobs.end_at,
        jobs.holds_gpu_share
    from allocation_hosts
    inner join jobs on allocation_hosts.job_key = jobs.job_key
),

labelled as (
    select
        samples.*,
        jobs.job_key as attributed_job_key
    from samples
    inner join job_aliases
        on
            samples.job_id = job_aliases.alias_job_id
            and {{ held_by_alias('job_aliases', 'samples.sampled_at') }}
    inner join jobs
        on job_aliases.job_key = jobs.job_key
        and samples.sampled_at >= jobs.start_at
        and samples.sampled_at < jobs.end_at
),

unlabelled_matches as (
    select
        samples.source_file,
        samples.source_line,
        count(host_jobs.job_key) as jobs_on_host,
        max(host_jobs.job_key) as only_job_key,
        max(case when host_jobs.holds_gpu_share or samples.gpu_instance_id is not null then 1 else 0 end)
            as is_fractional
    from samples
    left join host_jobs
        on lower(split_part(samples.hostname, '.', 1)) = host_jobs.host
        and samples.sampled_at >= host_jobs.start_at
        and samples.sampled_at < host_jobs.end_at
    where samples.job_id is null
    group by samples.source_file, samples.source_line
)

select
    labelled.*,
    'job_label' as attribution
from labelled

union all

select
    samples.*,
    case when unlabelled_matches.jobs_on_host = 1 and unlabelled_matches.is_fractional = 0
        then unlabelled_matches.only_job_key end as attributed_job_key,
    case
        when unlabelled_matches.jobs_on_host = 1 and unlabelled_matches.is_fractional = 0 then 'host_and_time'
        when unlabelled_matches.jobs_on_host = 1 then 'fractional_gpu_without_job_label'
        when unlabelled_matches.jobs_on_host = 0 then 'no_job_on_host'
        else 'several_jobs_on_host'
    end as attribution
from samples
inner join unlabelled_matches
    on samples.source_file = unlabelled_matches.source_file
    and samples.source_line = unlabelled_matches.source_line

union all

-- A job label that names no job running at the sample time.
select
    samples.*,
    cast(null as {{ dbt.type_string() }}) as attributed_job_key,
    'label_names_no_running_job' as attribution
from samples
where
    samples.job_id is not null
    and not exists (
        select 1 from labelled
        where labelled.source_file = samples.source_file and labelled.source_line = samples.source_line
    )
