with source as (
    select * from {{ source('raw', 'scheduler_jobs') }}
),

-- One job in exports that differ in the fields they have: a record without Cluster (an export without the field, or
-- a blank one) is the job of the one cluster whose records name that JobID with the same Submit, as a Kubernetes
-- event without a cluster is the job of the one cluster naming it (stg_scheduler__job_events); a record without
-- Submit is the job of its JobID (on its cluster, when it names one) when the records with a Submit know exactly
-- one such job (one cluster, or none, and one Submit). Each is then the same job as the records naming it, its
-- newest or ended record the one read, not a second job of the same GPU time. Records of two named clusters or of
-- two submit times stay two jobs, and so do records whose job is ambiguous.
clustered as (
    select
        source.*,
        coalesce(
            cluster,
            case when submit_at is not null
                and min(cluster) over (partition by job_id, submit_at)
                = max(cluster) over (partition by job_id, submit_at)
                then max(cluster) over (partition by job_id, submit_at) end
        ) as submit_cluster
    from source
),

known as (
    select
        clustered.*,
        case when submit_at is not null then coalesce(submit_cluster, '') end as known_cluster
    from clustered
),

submitted as (
    select
        known.*,
        case when submit_at is null and cluster is null
            and min(known_cluster) over (partition by job_id) = max(known_cluster) over (partition by job_id)
            and min(submit_at) over (partition by job_id) = max(submit_at) over (partition by job_id)
            then nullif(max(known_cluster) over (partition by job_id), '')
            else submit_cluster end as job_cluster,
        coalesce(
            submit_at,
            case when cluster is null
                and min(known_cluster) over (partition by job_id) = max(known_cluster) over (partition by job_id)
                and min(submit_at) over (partition by job_id) = max(submit_at) over (partition by job_id)
                then max(submit_at) over (partition by job_id) end,
            case when cluster is not null
                and min(submit_at) over (partition by submit_cluster, job_id)
                = max(submit_at) over (partition by submit_cluster, job_id)
                then max(submit_at) over (partition by submit_cluster, job_id) end
        ) as job_submit_at
    from known
),

-- A job in several exports (running in one, ended in the next): its latest accounting, a finished record over a
-- running one. The cluster and the submit time are part of the key: two jobs that share a JobID (another
-- cluster, an id counter reset) are two jobs, each with its own job_key.
newest as (
    {{ newest_delivery('submitted', ['job_cluster', 'job_id', 'job_submit_at'],
                       prefer='case when end_at is null then 1 else 0 end, end_at desc') }}
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
)

select * from renamed
