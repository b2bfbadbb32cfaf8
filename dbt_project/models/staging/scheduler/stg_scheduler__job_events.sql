with source as (
    select * from {{ source('raw', 'scheduler_events') }}
),

-- An event delivered without a cluster (a stream exported before it named one, kept in raw) is the job's on the one
-- cluster whose events name that job, else on the cluster of the same event (job, kind, time) delivered with one:
-- it is the same job, not a second one of the same GPU time. A Job name is namespace-scoped: the job is its namespace
-- and name ('' when the stream names no namespace), team-a/eval and team-b/eval two jobs.
namespaced as (
    select
        source.*,
        coalesce(namespace, '') as event_namespace
    from source
),

clustered as (
    select
        namespaced.*,
        coalesce(
            cluster,
            case when min(cluster) over (partition by event_namespace, job_id)
                = max(cluster) over (partition by event_namespace, job_id)
                then max(cluster) over (partition by event_namespace, job_id) end,
            max(cluster) over (partition by event_namespace, job_id, event, {{ adapter.quote('at') }})
        ) as event_cluster
    from namespaced
),

-- An event stream shipped again: each event (cluster, namespace, job, kind, time) once, from the newest file.
newest as (
    {{ newest_delivery('clustered', ['event_cluster', 'event_namespace', 'job_id', 'event', adapter.quote('at')]) }}
),

renamed as (
    select
        -- Blank when the stream names no cluster (one cluster's export): '' so that it keys and partitions as one.
        coalesce(event_cluster, '') as cluster,
        event_namespace as namespace,
        job_id,
        event as event_type,
        {{ adapter.quote("at") }} as event_at,
        gpus_requested,
        gpus_allocated,
        gpu_instance_profile,
        time_limit_s as time_limit_seconds,
        state,
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
