-- Every id a record may name a scheduler job by -> the job. Device samples and step records carry the Slurm JobID
-- or, for array tasks, the raw id (job_id_raw); both resolve to the job here, once for all their readers.
-- A JobID reused (after a controller reset, or on another cluster) names several jobs: each holds the id from its
-- own start until the next of them starts (the first from the beginning of time, the last for ever), so a record
-- belongs to the job with that id whose run contains the record's time (held_by_alias), and every record to
-- exactly one job. Jobs that never started hold an id only when no job with it started.
-- A record that names its cluster (a device sample's cluster) is matched within it: each cluster reuses its own ids,
-- so cluster_held_from and cluster_held_until are the same rule among the jobs of the job's cluster only (the jobs
-- that name no cluster among themselves): JobID 100 of cluster a and JobID 100 of cluster b run at once, each its
-- own cluster's.
with jobs as (
    select job_key, cluster, job_id, job_id_raw, start_at from {{ ref('int_jobs_unioned') }}
),

aliases as (
    select job_id as alias_job_id, job_key, cluster, job_id, start_at from jobs
    union
    select job_id_raw as alias_job_id, job_key, cluster, job_id, start_at from jobs
    where job_id_raw is not null and job_id_raw <> job_id
),

ordered as (
    select
        aliases.*,
        row_number() over (
            partition by alias_job_id
            order by case when start_at is null then 1 else 0 end, start_at, job_key
        ) as alias_rank,
        lead(start_at) over (
            partition by alias_job_id
            order by case when start_at is null then 1 else 0 end, start_at, job_key
        ) as next_start_at,
        row_number() over (
            partition by cluster, alias_job_id
            order by case when start_at is null then 1 else 0 end, start_at, job_key
        ) as cluster_alias_rank,
        lead(start_at) over (
            partition by cluster, alias_job_id
            order by case when start_at is null then 1 else 0 end, start_at, job_key
        ) as cluster_next_start_at
    from aliases
)

select
    alias_job_id,
    job_key,
    job_id,
    case when alias_rank > 1 then start_at end as held_from,
    next_start_at as held_until,
    cluster,
    case when cluster_alias_rank > 1 then start_at end as cluster_held_from,
    cluster_next_start_at as cluster_held_until
from ordered
where alias_rank = 1 or start_at is not null
