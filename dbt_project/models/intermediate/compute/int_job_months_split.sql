-- Each job's occupied GPU time split over the calendar months it ran in, every month from its start to its end (one
-- it runs straight through too). A job whose occupation has gaps (a requeued Kubernetes job) is spread over its span
-- in proportion; its months add up to its occupied GPU-seconds exactly. is_cloud_billed marks a job that a FOCUS
-- compute line (not Storage) names by ResourceId; is_cloud a job billed so or run on a cluster the newest contract
-- lists as rented (owned_vs_cloud.cloud_clusters): its cost comes from the bill, never from owned capacity, and
-- until the bill arrives it has none (pending in int_job_months_costed). A job still running is split over the
-- months from its start to when its export saw it running (occupied_until_at, int_jobs_unioned): its cost so far.
with jobs as (
    select
        job_key,
        cluster,
        job_id,
        batch_id,
        phase,
        start_at,
        occupied_until_at as end_at,
        occupied_gpu_seconds,
        {{ seconds_between('start_at', 'occupied_until_at') }} as span_seconds
    from {{ ref('int_jobs_attributed') }}
    where start_at is not null and occupied_until_at is not null and occupied_gpu_seconds > 0
),

cloud_jobs as (
    select distinct job_key from {{ ref('int_focus_charges_attributed') }}
    where job_key is not null and {{ is_cloud_compute('service_category') }}
),

cloud_clusters as (
    select distinct code as cluster
    from {{ ref('stg_contract__enumerations') }}
    where enumeration = 'cloud_cluster' and contract_version = {{ latest_contract_version() }}
),

months as (
    {{ months_run('jobs', 'start_at', 'end_at') }}
),

month_bounds as (
    {{ month_bounds('months') }}
),

job_overlaps as (
    select
        jobs.job_key,
        jobs.cluster,
        jobs.job_id,
        jobs.batch_id,
        jobs.phase,
        month_bounds.month_start,
        jobs.occupied_gpu_seconds,
        jobs.span_seconds,
        {{ seconds_between(
            'greatest(jobs.start_at, month_bounds.month_from)',
            'least(jobs.end_at, month_bounds.month_until)') }} as overlap_seconds
    from jobs
    inner join month_bounds
        on jobs.start_at < month_bounds.month_until
        and jobs.end_at > month_bounds.month_from
),

-- The span's seconds up to each month's end: a month takes the rounded share up to its end less the rounded share
-- up to its start, so a job's months add up to its occupied GPU-seconds exactly.
job_months_through as (
    select
        *,
        sum(overlap_seconds) over (
            partition by job_key order by month_start rows between unbounded preceding and current row
        ) as through_seconds
    from job_overlaps
    where overlap_seconds > 0
)

select
    job_months_through.job_key,
    job_months_through.job_id,
    job_months_through.batch_id,
    job_months_through.phase,
    job_months_through.month_start,
    cast(case when job_months_through.span_seconds = job_months_through.overlap_seconds
        then job_months_through.occupied_gpu_seconds
        else round(cast(job_months_through.occupied_gpu_seconds as double) * job_months_through.through_seconds
            / job_months_through.span_seconds, 0)
            - round(cast(job_months_through.occupied_gpu_seconds as double)
                * (job_months_through.through_seconds - job_months_through.overlap_seconds)
                / job_months_through.span_seconds, 0)
    end as bigint) as occupied_gpu_seconds,
    cloud_jobs.job_key is not null as is_cloud_billed,
    cloud_jobs.job_key is not null or cloud_clusters.cluster is not null as is_cloud
from job_months_through
left join cloud_jobs on job_months_through.job_key = cloud_jobs.job_key
left join cloud_clusters on job_months_through.cluster = cloud_clusters.cluster
