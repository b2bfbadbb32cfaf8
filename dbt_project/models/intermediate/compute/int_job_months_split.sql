-- Each job's occupied GPU time split over the calendar months it ran in, every month from its start to its end (one it
-- runs straight through too). A Kubernetes job occupies its GPUs in segments, from each start until its run's next
-- preempt, requeue or end, or until its export saw it running (int_job_segments): its time is split by the months its
-- segments ran in, never spread over the gaps between them (a job preempted on 31 October and started again on 2
-- November has no time on 1 November). A Slurm job is one segment, from its start to occupied_until_at. A month takes
-- the job's occupied GPU-seconds in proportion to its segments' seconds in it, each times the GPUs it held
-- (segment_gpus); the months add up to its occupied GPU-seconds exactly. is_cloud_billed marks a job that a FOCUS
-- compute line (not Storage) names by ResourceId; is_cloud a job billed so or run on a cluster the newest contract
-- lists as rented (owned_vs_cloud.cloud_clusters): its cost comes from the bill, never from owned capacity, and until
-- the bill arrives it has none (pending in int_job_months_costed). A job still running is split over the months from
-- its start to when its export saw it running (occupied_until_at, int_jobs_unioned): its cost so far.
with jobs as (
    select
        job_key,
        cluster,
        job_id,
        batch_id,
        phase,
        occupied_gpu_seconds
    from {{ ref('int_jobs_attributed') }}
    where start_at is not null and occupied_until_at is not null and occupied_gpu_seconds > 0
),

-- The segments (int_job_segments) of the jobs that occupied GPU time.
occupied_segments as (
    select segments.job_key, segments.segment_from, segments.segment_until,
        coalesce(segments.segment_gpus, 1) as segment_weight
    from {{ ref('int_job_segments') }} as segments
    inner join jobs on segments.job_key = jobs.job_key
),

-- The seconds a job's segments occupied in all, each times the GPUs it held (a Slurm job's one segment: 1).
occupations as (
    select job_key, sum({{ seconds_between('segment_from', 'segment_until') }} * segment_weight) as occupied_seconds
    from occupied_segments
    group by job_key
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
    {{ months_run('occupied_segments', 'segment_from', 'segment_until') }}
),

month_bounds as (
    {{ month_bounds('months') }}
),

segment_overlaps as (
    select
        occupied_segments.job_key,
        month_bounds.month_start,
        {{ seconds_between(
            'greatest(occupied_segments.segment_from, month_bounds.month_from)',
            'least(occupied_segments.segment_until, month_bounds.month_until)') }}
            * occupied_segments.segment_weight as overlap_seconds
    from occupied_segments
    inner join month_bounds
        on occupied_segments.segment_from < month_bounds.month_until
        and occupied_segments.segment_until > month_bounds.month_from
),

job_overlaps as (
    select
        jobs.job_key,
        jobs.cluster,
        jobs.job_id,
        jobs.batch_id,
        jobs.phase,
        segment_overlaps.month_start,
        jobs.occupied_gpu_seconds,
        occupations.occupied_seconds,
        sum(segment_overlaps.overlap_seconds) as overlap_seconds
    from segment_overlaps
    inner join jobs on segment_overlaps.job_key = jobs.job_key
    inner join occupations on segment_overlaps.job_key = occupations.job_key
    group by
        jobs.job_key, jobs.cluster, jobs.job_id, jobs.batch_id, jobs.phase, segment_overlaps.month_start,
        jobs.occupied_gpu_seconds, occupations.occupied_seconds
),

-- The occupied seconds up to each month's end: a month takes the rounded share up to its end less the rounded share
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
    cast(case when job_months_through.occupied_seconds = job_months_through.overlap_seconds
        then job_months_through.occupied_gpu_seconds
        else round(cast(job_months_through.occupied_gpu_seconds as double) * job_months_through.through_seconds
            / job_months_through.occupied_seconds, 0)
            - round(cast(job_months_through.occupied_gpu_seconds as double)
                * (job_months_through.through_seconds - job_months_through.overlap_seconds)
                / job_months_through.occupied_seconds, 0)
    end as bigint) as occupied_gpu_seconds,
    cloud_jobs.job_key is not null as is_cloud_billed,
    cloud_jobs.job_key is not null or cloud_clusters.cluster is not null as is_cloud
from job_months_through
left join cloud_jobs on job_months_through.job_key = cloud_jobs.job_key
left join cloud_clusters on job_months_through.cluster = cloud_clusters.cluster
