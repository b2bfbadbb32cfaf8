-- One row per scheduler allocation, whichever scheduler ran it: Slurm allocations (step rows left out,
-- they live inside their allocation) and Kubernetes-style jobs folded from their event stream. job_key (cluster,
-- JobID, submit time) tells apart two jobs that share a JobID; every model after this one joins jobs on it.
-- A Kubernetes job name submitted again is another job (macros/kubernetes_event_sequence.sql folds the event stream
-- into runs); a Kubernetes job occupies its GPUs from each start until its run's next preempt, requeue or end.
-- A job still running when its export was written (is_running: a Slurm allocation that started with no End, a
-- Kubernetes run whose last event is a start) has occupied its GPUs from its start until the export saw it running
-- (running_seen_at): Slurm's Start + Elapsed (sacct's Elapsed of a running job runs to when sacct ran); for a
-- Kubernetes run, the newest event its cluster's stream holds (any job's: the stream was exported after it and
-- shows no end), or its own start when its name was submitted again since (that run's end was never exported).
-- occupied_until_at is the end of its occupation so far: end_at, else running_seen_at, else (a Kubernetes run
-- preempted or requeued and not started again yet) the end of its last occupation. A later export that ends the
-- job replaces them with its real end (stg_scheduler__sacct_jobs prefers an ended record).
-- Kubernetes hands a pod exactly the GPUs it requests (an extended resource is never overcommitted): a run that
-- started and whose events state no allocation was allocated its request; one never started holds none.
{% set allocated = "coalesce(event_attributes.gpus_allocated, case when event_runs.start_at is not null "
    ~ "then event_attributes.gpus_requested end, 0)" %}
with sacct as (
    select * from {{ ref('stg_scheduler__sacct_jobs') }}
    where record_type = 'allocation'
),

-- A started allocation without an End is running: sacct saw it running Elapsed after its Start (at its Start
-- when the export has no Elapsed).
sacct_running as (
    select
        sacct.*,
        start_at is not null and end_at is null as is_running,
        case when start_at is not null and end_at is null
            then cast({{ dbt.dateadd('second', 'coalesce(elapsed_seconds, 0)', 'start_at') }}
                as {{ dbt.type_timestamp() }})
        end as running_seen_at
    from sacct
),

{{ kubernetes_event_sequence() }},

event_jobs as (
    select
        max(job_key) as job_key,
        cluster,
        namespace,
        job_id,
        min(case when event_type = 'submit' then event_at end) as submit_at,
        min(event_at) as first_event_at,
        min(case when event_type = 'start' then event_at end) as start_at,
        max(case when event_type = 'end' then event_at end) as end_at,
        sum(case when event_type = 'start' and next_event_at is not null
            then {{ seconds_between('event_at', 'next_event_at') }} else 0 end) as occupied_seconds,
        -- The same seconds, each segment's times the GPUs its start holds.
        sum(case when event_type = 'start' and next_event_at is not null
            then {{ seconds_between('event_at', 'next_event_at') }} * segment_gpus else 0 end)
            as occupied_allocation_seconds,
        -- Every start after the first is a restart (after a preemption or a requeue); a run never started has none.
        cast(greatest(sum(case when event_type = 'start' then 1 else 0 end) - 1, 0) as integer) as restarts,
        max(case when recency = 1 then event_type end) as last_event_type,
        max(case when event_type = 'end' and recency = 1 then state end) as end_state,
        -- The end of its last occupation that a later event stopped (a preempted run's occupied time ends there).
        max(case when event_type = 'start' then next_event_at end) as last_occupied_at,
        -- The start no later event (but a submit) stopped: the run holds its GPUs from it still.
        max(case when event_type = 'start' and next_event_at is null then event_at end) as open_start_at,
        max(case when event_type = 'start' and next_event_at is null then segment_gpus end) as open_start_gpus,
        run_number
    from event_sequence
    group by cluster, namespace, job_id, run_number
),

-- The newest event of each cluster's stream: a run that shows no end by then was still running then.
cluster_streams as (
    select cluster, max(event_at) as newest_event_at
    from events
    group by cluster
),

-- A run still running (its last event a start) was last seen running at its stream's newest event, if it is its
-- name's last run; one whose name was submitted again since was seen running at its start only.
event_runs as (
    select
        event_jobs.*,
        case when event_jobs.last_event_type = 'start' then
            case when event_jobs.run_number = max(event_jobs.run_number) over (
                    partition by event_jobs.cluster, event_jobs.namespace, event_jobs.job_id)
                then cluster_streams.newest_event_at
                else event_jobs.open_start_at
            end
        end as running_seen_at
    from event_jobs
    inner join cluster_streams on event_jobs.cluster is not distinct from cluster_streams.cluster
),

event_attributes as (
    select
        cluster,
        namespace,
        job_id,
        max(gpus_requested) as gpus_requested,
        max(gpus_allocated) as gpus_allocated,
        max(gpu_instance_profile) as gpu_instance_profile,
        max(time_limit_seconds) as time_limit_seconds,
        max(batch_id) as batch_id,
        max(phase) as phase,
        max(run_reason) as run_reason,
        max(restart_of) as restart_of,
        max(continues) as continues,
        max(end_reason) as end_reason,
        run_number
    from events
    group by cluster, namespace, job_id, run_number
),

kubernetes as (
    select
        event_runs.job_key,
        nullif(event_runs.cluster, '') as cluster,
        event_runs.job_id,
        cast(null as {{ dbt.type_string() }}) as job_id_raw,
        'kubernetes' as scheduler,
        case
            when event_runs.last_event_type = 'end' then event_runs.end_state
            when event_runs.last_event_type = 'preempt' then 'PREEMPTED'
            when event_runs.last_event_type = 'start' then 'RUNNING'
            else 'PENDING'
        end as state,
        cast(null as {{ dbt.type_string() }}) as cancelled_by,
        -- A submit stamped after the start it led to: the job was submitted by its start at the latest.
        case when event_runs.submit_at > event_runs.start_at then event_runs.start_at else event_runs.submit_at end
            as submit_at,
        -- Kubernetes events name no eligible time: the queue starts at the submit.
        cast(null as {{ dbt.type_timestamp() }}) as eligible_at,
        event_runs.start_at,
        event_runs.end_at,
        event_runs.last_event_type = 'start' as is_running,
        event_runs.running_seen_at,
        coalesce(event_runs.end_at, event_runs.running_seen_at, event_runs.last_occupied_at) as occupied_until_at,
        event_runs.occupied_seconds + case when event_runs.last_event_type = 'start'
            then {{ seconds_between('event_runs.open_start_at', 'event_runs.running_seen_at') }} else 0 end
            as occupied_seconds,
        event_runs.occupied_allocation_seconds + case when event_runs.last_event_type = 'start'
            then {{ seconds_between('event_runs.open_start_at', 'event_runs.running_seen_at') }}
            * event_runs.open_start_gpus else 0 end as occupied_allocation_seconds,
        event_attributes.time_limit_seconds,
        1 as array_tasks,
        coalesce(event_attributes.gpus_requested, event_attributes.gpus_allocated, 0) as gpus_requested,
        {{ allocated }} as gpus_allocated,
        -- An event's GPUs are all MIG instances of its profile, or all whole GPUs.
        case when event_attributes.gpu_instance_profile is not null
            then coalesce(event_attributes.gpus_requested, event_attributes.gpus_allocated, 0) else 0 end
            as mig_instances_requested,
        case when event_attributes.gpu_instance_profile is not null
            then coalesce(event_attributes.gpus_requested, event_attributes.gpus_allocated, 0)
            * {{ mig_profile_slices('event_attributes.gpu_instance_profile') }} else 0 end as mig_slices_requested,
        case when event_attributes.gpu_instance_profile is not null
            then {{ allocated }} else 0 end as mig_instances_allocated,
        case when event_attributes.gpu_instance_profile is not null
            then {{ allocated }}
            * {{ mig_profile_slices('event_attributes.gpu_instance_profile') }} else 0 end as mig_slices_allocated,
        event_attributes.gpu_instance_profile,
        cast(null as {{ dbt.type_string() }}) as mig_gpu_type,
        0 as shards_requested,
        0 as shards_allocated,
        0 as mps_requested,
        0 as mps_allocated,
        event_runs.restarts,
        event_attributes.batch_id,
        event_attributes.phase,
        event_attributes.run_reason,
        event_attributes.restart_of,
        event_attributes.continues,
        event_attributes.end_reason
    from event_runs
    inner join event_attributes
        on event_runs.cluster is not distinct from event_attributes.cluster
        and event_runs.namespace is not distinct from event_attributes.namespace
        and event_runs.job_id = event_attributes.job_id
        and event_runs.run_number = event_attributes.run_number
),

slurm as (
    select
        job_key,
        cluster,
        job_id,
        job_id_raw,
        'slurm' as scheduler,
        state,
        cancelled_by,
        submit_at,
        eligible_at,
        start_at,
        end_at,
        is_running,
        running_seen_at,
        coalesce(end_at, running_seen_at) as occupied_until_at,
        case when start_at is not null
            then coalesce({{ seconds_between('start_at', 'coalesce(end_at, running_seen_at)') }}, 0) else 0 end
            as occupied_seconds,
        gpus_allocated * case when start_at is not null
            then coalesce({{ seconds_between('start_at', 'coalesce(end_at, running_seen_at)') }}, 0) else 0 end
            as occupied_allocation_seconds,
        time_limit_seconds,
        array_tasks,
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
        restarts,
        batch_id,
        phase,
        run_reason,
        restart_of,
        continues,
        end_reason
    from sacct_running
)

select * from slurm
union all
select * from kubernetes
