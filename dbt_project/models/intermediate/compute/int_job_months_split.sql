-- Each job's occupied GPU time split over the calendar months it ran in. A job whose occupation has gaps
-- (a requeued Kubernetes job) is spread over its span in proportion. is_cloud_billed marks a job that a FOCUS
-- line names by ResourceId: its cost comes from the bill, not from owned capacity.
with jobs as (
    select
        job_key,
        job_id,
        batch_id,
        phase,
        start_at,
        end_at,
        occupied_gpu_seconds,
        {{ seconds_between('start_at', 'end_at') }} as span_seconds
    from {{ ref('int_jobs_attributed') }}
    where start_at is not null and end_at is not null and occupied_gpu_seconds > 0
),

cloud_jobs as (
    select distinct job_key from {{ ref('int_focus_charges_attributed') }} where job_key is not null
),

months as (
    select cast({{ dbt.date_trunc('month', 'start_at') }} as date) as month_start from jobs
    union
    select cast({{ dbt.date_trunc('month', 'end_at') }} as date) from jobs
),

month_bounds as (
    {{ month_bounds('months') }}
),

job_overlaps as (
    select
        jobs.job_key,
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
)

select
    job_overlaps.job_key,
    job_overlaps.job_id,
    job_overlaps.batch_id,
    job_overlaps.phase,
    job_overlaps.month_start,
    cast(case when job_overlaps.span_seconds = job_overlaps.overlap_seconds then job_overlaps.occupied_gpu_seconds
        else round(cast(job_overlaps.occupied_gpu_seconds as double) * job_overlaps.overlap_seconds
            / job_overlaps.span_seconds, 0)
    end as bigint) as occupied_gpu_seconds,
    cloud_jobs.job_key is not null as is_cloud_billed
from job_overlaps
left join cloud_jobs on job_overlaps.job_key = cloud_jobs.job_key
where job_overlaps.overlap_seconds > 0
