-- One row per stretch of time a job occupied its GPUs (a segment), every job that has started and has an
-- occupied_until_at. A Kubernetes job occupies its GPUs from each start until its run's next event but a submit
-- (preempt, requeue or end; macros/kubernetes_event_sequence.sql), and the start no event stopped, while its job is
-- running, until its export saw it running (int_jobs_unioned counts the same seconds); it holds none in the gaps
-- between, and in each segment the GPUs its start holds (segment_gpus: one preempted with 8 GPUs and started again with
-- 1 holds 1 in its second segment). A Slurm job (a requeued one's incarnations are jobs of their own) is one segment,
-- from its start to occupied_until_at. A segment of no time is left out. int_job_months_split splits a job's time by
-- its segments' months; int_device_samples_attributed gives a job the samples inside its segments only, and
-- int_device_samples_tiered lets none of them stand for time past its segment's end.
with
{{ kubernetes_event_sequence() }},

jobs as (
    select job_key, scheduler, start_at, occupied_until_at, is_running, running_seen_at
    from {{ ref('int_jobs_attributed') }}
    where start_at is not null and occupied_until_at is not null
),

segments as (
    select
        jobs.job_key,
        event_sequence.event_at as segment_from,
        coalesce(event_sequence.next_event_at, case when jobs.is_running then jobs.running_seen_at end)
            as segment_until,
        event_sequence.segment_gpus
    from event_sequence
    inner join jobs on event_sequence.job_key = jobs.job_key
    where event_sequence.event_type = 'start' and jobs.scheduler = 'kubernetes'
    union all
    select job_key, start_at, occupied_until_at, cast(null as integer) as segment_gpus
    from jobs
    where scheduler is null or scheduler <> 'kubernetes'
)

select job_key, segment_from, segment_until, segment_gpus
from segments
where segment_until > segment_from
