{#- The CTEs that fold the Kubernetes-style event stream (stg_scheduler__job_events) into runs, each a job of its own
    (int_jobs_unioned): `events`, every event with its run_number, and `event_sequence`, every event with its run's
    job_key, the next event of its run other than a submit (next_event_at: a start occupies its GPUs until then), the
    GPUs a start holds (segment_gpus) and its
    recency in its run (1: the run's last event). A job is its cluster, namespace ('' when the stream names none: Job
    names are namespace-scoped) and name. int_jobs_unioned folds the runs into jobs; int_job_segments takes
    each start's occupation (a segment), by which int_job_months_split splits a job's GPU time over months and
    int_device_samples_attributed gives it its samples.
    A name submitted again is another job: a run of a name starts at the first event after an end, and at a submit
    after another submit with no end between (a stream whose submit was never exported is a run too), with its own
    events, times, GPUs and labels. A submit goes first among events at the same instant. Emits CTE definitions
    separated by commas, with no leading `with` and no trailing comma. -#}
{% macro kubernetes_event_sequence() %}
ranked_events as (
    select
        *,
        case when event_type = 'submit' then 0 else 1 end as submit_first
    from {{ ref('stg_scheduler__job_events') }}
),

ordered_events as (
    select
        *,
        lag(event_type) over (
            partition by cluster, namespace, job_id order by event_at, submit_first, source_file, source_line
        ) as previous_event_type
    from ranked_events
),

-- The events since the name's last end (a segment), and the submits among them before each event.
segmented_events as (
    select
        *,
        sum(case when previous_event_type = 'end' then 1 else 0 end) over (
            partition by cluster, namespace, job_id order by event_at, submit_first, source_file, source_line
            rows between unbounded preceding and current row
        ) as segment
    from ordered_events
),

counted_events as (
    select
        *,
        coalesce(sum(case when event_type = 'submit' then 1 else 0 end) over (
            partition by cluster, namespace, job_id, segment
            order by event_at, submit_first, source_file, source_line
            rows between unbounded preceding and 1 preceding
        ), 0) as submits_before
    from segmented_events
),

-- A run starts after an end, and at a submit when its segment already had one (the name deleted and submitted
-- again). A submit stamped after its run's start (the two clocks apart) is that run's: not a run of its own with
-- no start, which left the job's GPU time unpriced and an orphan start RUNNING for ever.
events as (
    select
        *,
        sum(case when previous_event_type = 'end' or (event_type = 'submit' and submits_before > 0) then 1 else 0 end)
            over (
                partition by cluster, namespace, job_id order by event_at, submit_first, source_file, source_line
                rows between unbounded preceding and current row
            ) as run_number
    from counted_events
),

-- A Kubernetes job occupies its GPUs from each start until the next preempt, requeue or end.
event_sequence as (
    select
        cluster,
        namespace,
        job_id,
        event_type,
        event_at,
        state,
        run_number,
        -- A run whose submit was never exported is keyed by its first event: two such runs of a name are two jobs.
        -- A namespaced Job is keyed by namespace/name (cluster/team-a/eval@submit); one of a stream naming no
        -- namespace by its name alone, as before.
        {{ job_key("nullif(cluster, '')",
            dbt.concat(["coalesce(namespace, '')",
                "case when coalesce(namespace, '') = '' then '' else '/' end", 'job_id']),
            'coalesce(min(case when event_type = \'submit\' then event_at end) over ('
            ~ 'partition by cluster, namespace, job_id, run_number), '
            ~ 'min(event_at) over (partition by cluster, namespace, job_id, run_number))')
        }} as job_key,
        -- The GPUs (or MIG instances) a start holds until its next event: its own, else its run's (int_jobs_unioned's
        -- gpus_allocated). A job preempted and started again with fewer GPUs holds fewer in its later segment.
        coalesce(gpus_allocated, gpus_requested,
            max(gpus_allocated) over (partition by cluster, namespace, job_id, run_number),
            max(gpus_requested) over (partition by cluster, namespace, job_id, run_number), 0) as segment_gpus,
        -- The next event other than a submit (a submit stamped after its start does not end an occupation).
        min(case when event_type <> 'submit' then event_at end) over (
            partition by cluster, namespace, job_id, run_number
            order by event_at, submit_first, source_file, source_line
            rows between 1 following and unbounded following
        ) as next_event_at,
        row_number() over (
            partition by cluster, namespace, job_id, run_number
            order by event_at desc, submit_first desc, source_file desc, source_line desc
        ) as recency
    from events
)
{% endmacro %}
