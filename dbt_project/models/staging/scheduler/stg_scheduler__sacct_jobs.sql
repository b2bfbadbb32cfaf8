with source as (
    select * from {{ source('raw', 'scheduler_jobs') }}
),

-- A job in several exports (running in one, ended in the next): its latest accounting, a finished record over a
-- running one. The cluster and the submit time are part of the key: two jobs that share a JobID (another
-- cluster, an id counter reset) are two jobs, each with its own job_key.
newest as (
    {{ newest_delivery('source', ['cluster', 'job_id', 'submit_at'],
                       prefer='case when end_at is null then 1 else 0 end, end_at desc') }}
),

renamed as (
    select
        {{ job_key('cluster', 'job_id', 'submit_at') }} as job_key,
        cluster,
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
        submit_at,
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
