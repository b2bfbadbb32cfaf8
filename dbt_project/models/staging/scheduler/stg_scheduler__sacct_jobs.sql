with source as (
    select * from {{ source('raw', 'scheduler_jobs') }}
),

-- One job in exports that differ in the fields they have: a record without Cluster (an export without the field, or
-- a blank one) is the job of the one cluster whose records name that JobID with the same Submit, as a Kubernetes
-- event without a cluster is the job of the one cluster naming it (stg_scheduler__job_events), else, when its
-- JobID's records know that one Submit only, of the one cluster they name (an export without Cluster beside one
-- without Submit); a record without Submit is the job of its JobID (on its cluster, when it names one) when the
-- records with a Submit know exactly one such job (one cluster, or none, and one Submit). Each is then the same job
-- as the records naming it, its newest or ended record the one read, not a second job of the same GPU time. Records
-- of two named clusters or of two submit times stay two jobs, and so do records whose job is ambiguous.
clustered as (
    select
        source.*,
        coalesce(
            cluster,
            case when submit_at is not null
                and min(cluster) over (partition by job_id, submit_at)
                = max(cluster) over (partition by job_id, submit_at)
                then max(cluster) over (partition by job_id, submit_at) end,
            case when submit_at is not null
                and min(submit_at) over (partition by job_id) = max(submit_at) over (partition by job_id)
                and min(cluster) over (partition by job_id) = max(cluster) over (partition by job_id)
                then max(cluster) over (partition by job_id) end
        ) as submit_cluster
    from source
),

known as (
    select
        clustered.*,
        case when submit_at is not null then coalesce(submit_cluster, '') end as known_cluster
    from clustered
),

-- The records with a Submit of the JobID know exactly one job: one cluster (or none) and one Submit.
one_known as (
    select
        known.*,
        min(known_cluster) over (partition by job_id) = max(known_cluster) over (partition by job_id)
        and min(submit_at) over (partition by job_id) = max(submit_at) over (partition by job_id) as one_known_job
    from known
),

submitted as (
    select
        one_known.*,
        case when submit_at is null and cluster is null and one_known_job
            then nullif(max(known_cluster) over (partition by job_id), '')
            else submit_cluster end as job_cluster,
        coalesce(
            submit_at,
            case when cluster is null and one_known_job
                then max(submit_at) over (partition by job_id) end,
            case when cluster is not null
                and min(submit_at) over (partition by submit_cluster, job_id)
                = max(submit_at) over (partition by submit_cluster, job_id)
                then max(submit_at) over (partition by submit_cluster, job_id) end
        ) as job_submit_at
    from one_known
),

-- A job in several exports (running in one, ended in the next): its latest accounting, a finished record over a
-- running one. The cluster and the submit time are part of the key: two jobs that share a JobID (another
-- cluster, an id counter reset) are two jobs, each with its own job_key.
newest as (
    {{ newest_delivery('submitted', ['job_cluster', 'job_id', 'job_submit_at'],
                       prefer='case when end_at is null then 1 else 0 end, end_at desc') }}
),

-- A pending job array is one record naming the tasks not started yet (`2002_[3-4]`; sacct writes numbers and ranges
-- separated by commas, then its `%` limit of tasks run at once: `2005_[1,3,5-7%2]`). A task that runs is a record
-- of its own (`2002_3`), in the same export or a later one, while an earlier export still holds the range: the task
-- is no longer pending wherever it is seen (a record of the range's JobID and task, of its cluster or of none,
-- submitted no earlier than the range), and a range none of whose tasks is still pending is gone.
array_ranges as (
    select
        job_cluster as range_cluster,
        job_id as range_job_id,
        job_submit_at as range_submit_at,
        regexp_replace(job_id, '%[0-9]+', '') as array_tasks
    from newest
    where record_type = 'allocation' and job_id like '%[%'
),

range_tasks as (
    {{ expand_hostlist('array_ranges', ['range_cluster', 'range_job_id', 'range_submit_at'], 'array_tasks') }}
),

array_tasks_pending as (
    select
        range_tasks.range_cluster,
        range_tasks.range_job_id,
        range_tasks.range_submit_at,
        count(distinct case when task_records.job_id is null then range_tasks.hostname end) as tasks_pending
    from range_tasks
    left join (
        select distinct job_cluster, job_id, job_submit_at
        from newest
        where record_type = 'allocation'
    ) as task_records
        on task_records.job_id = range_tasks.hostname
        and (task_records.job_cluster = range_tasks.range_cluster
            or task_records.job_cluster is null or range_tasks.range_cluster is null)
        and (task_records.job_submit_at >= range_tasks.range_submit_at
            or task_records.job_submit_at is null or range_tasks.range_submit_at is null)
    group by range_tasks.range_cluster, range_tasks.range_job_id, range_tasks.range_submit_at
),

renamed as (
    select
        {{ job_key('job_cluster', 'job_id', 'job_submit_at') }} as job_key,
        job_cluster as cluster,
        job_id,
        job_id_raw,
        allocation_id,
        step_name,
        record_type,
        job_name,
        account,
        partition as partition_name,
        user_name,
        state,
        cancelled_by,
        exit_code,
        failed_node,
        restarts,
        job_submit_at as submit_at,
        eligible_at,
        start_at,
        end_at,
        elapsed_seconds,
        time_limit_seconds,
        -- The tasks the record stands for: a pending array's tasks still pending, else one.
        coalesce(array_tasks_pending.tasks_pending, 1) as array_tasks,
        gpus_requested,
        gpus_allocated,
        mig_instances_requested,
        mig_slices_requested,
        mig_instances_allocated,
        mig_slices_allocated,
        gpu_instance_profile,
        mig_gpu_type,
        shards_requested,
        shards_allocated,
        mps_requested,
        mps_allocated,
        node_count,
        node_list,
        batch_id,
        phase,
        run_reason,
        restart_of,
        continues,
        end_reason,
        source_file,
        source_line
    from newest
    left join array_tasks_pending
        on newest.job_id = array_tasks_pending.range_job_id
        and newest.job_cluster is not distinct from array_tasks_pending.range_cluster
        and newest.job_submit_at is not distinct from array_tasks_pending.range_submit_at
    where array_tasks_pending.tasks_pending is null or array_tasks_pending.tasks_pending > 0
)

select * from renamed
