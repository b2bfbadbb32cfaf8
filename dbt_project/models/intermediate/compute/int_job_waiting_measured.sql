-- Waiting per job (R10), each kind on its own and never added into one figure: queued before the allocation,
-- setup, data and sync waits, hang after a fault and tail inside it, preemption recovery across a restart.
-- The figures overlap in time (a comm-wait sample can fall in the tail; a failed job's hang is part of its tail;
-- a restart's setup is the allocated end of its recovery), which is one more reason never to sum them.
-- GPU-seconds: queued x GPUs requested x the jobs the row stands for (array_tasks: a pending array's tasks, each
-- waiting with its own GPUs; null when the requested GPUs are unknown, an export without ReqTRES), every other
-- figure x GPUs allocated. Money: an allocated interval costs
-- the job's own compute_cost x interval GPU-seconds / occupied GPU-seconds, rounded once to the cent per job and
-- figure, never more than the compute_cost (a figure measured by samples can stand for more GPU-seconds than the
-- job occupied: a host's unlabelled idle GPUs all go to its one job); queued time and the unallocated part of a recovery cost nothing on owned capacity.
with jobs as (
    select * from {{ ref('int_jobs_costed') }}
),

steps as (
    select * from {{ ref('int_job_steps_aggregated') }}
),

-- A requeued Slurm job (preempted, its node failed, scontrol requeue) keeps its JobID and Comment; Slurm gives it a
-- new Submit, the requeue time, and counts it in Restarts. sacct --duplicates lists each incarnation, each a job of
-- its own (its job_key has its Submit): the one before is the same cluster's and JobID's submitted last before it.
incarnations as (
    select
        job_key,
        lag(end_at) over (partition by cluster, job_id order by submit_at) as previous_incarnation_end_at
    from jobs
    where scheduler = 'slurm' and submit_at is not null
),

-- Idle device time after the last step (the GPUs held but hung after a fault), from the utilization tiers.
utilization as (
    select job_key, idle_after_last_step_gpu_seconds from {{ ref('int_job_utilization_tiered') }}
),

joined as (
    select
        jobs.*,
        steps.steps_run,
        steps.first_step_at,
        steps.last_step_end_at,
        utilization.idle_after_last_step_gpu_seconds,
        jobs.scheduler = 'slurm' and jobs.restarts > 0 as is_requeued_incarnation,
        -- Queued for capacity from Eligible (Submit when the export does not say): before it the job was held (a
        -- dependency, a --begin time, a hold), not waiting for GPUs; that time is no waiting figure.
        case when jobs.eligible_at > jobs.submit_at then jobs.eligible_at else jobs.submit_at end as queued_from_at,
        -- The end a job recovers from: a requeued incarnation's previous one (without --duplicates sacct lists only
        -- the newest: its own Submit, the requeue time), else the job its restart_of label names.
        case when jobs.scheduler = 'slurm' and jobs.restarts > 0
            then coalesce(incarnations.previous_incarnation_end_at, jobs.submit_at)
            else parent.end_at
        end as restarted_job_end_at
    from jobs
    left join steps on jobs.job_key = steps.job_key
    left join utilization on jobs.job_key = utilization.job_key
    left join incarnations on jobs.job_key = incarnations.job_key
    left join jobs as parent
        on jobs.lineage_type = 'restart_of'
        and parent.job_key = jobs.lineage_job_key
),

intervals as (
    select
        job_key,
        job_id,
        batch_id,
        phase,
        scheduler,
        state,
        is_failed,
        lineage_type,
        lineage_job_id,
        submit_at,
        eligible_at,
        queued_from_at,
        start_at,
        end_at,
        first_step_at,
        last_step_end_at,
        gpus_requested,
        gpus_allocated,
        requested_gpu_equivalents,
        allocated_gpu_equivalents,
        array_tasks,
        occupied_gpu_seconds,
        compute_cost,
        coalesce(steps_run, 0) as steps_run,
        -- A requeued incarnation's wait is its preemption recovery, never queued.
        case when queued_from_at is not null and start_at is not null
            then case when is_requeued_incarnation then 0
                else greatest({{ seconds_between('queued_from_at', 'start_at') }}, 0) end
        end as queued_seconds,
        case when first_step_at is not null and start_at is not null
            then greatest({{ seconds_between('start_at', 'first_step_at') }}, 0) end as setup_seconds,
        case when last_step_end_at is not null and end_at is not null
            then greatest({{ seconds_between('last_step_end_at', 'end_at') }}, 0) end as tail_seconds,
        case when samples > 0 then comm_wait_gpu_seconds end as data_and_sync_wait_gpu_seconds,
        -- Only jobs that ended in a failure, with step records and device samples: without steps there is no
        -- telling where the work stopped, without samples whether the GPUs idled; the hang is then null, not 0.
        case when is_failed and last_step_end_at is not null and end_at is not null and samples > 0
            then coalesce(idle_after_last_step_gpu_seconds, 0) end as hang_after_fault_gpu_seconds,
        -- A restart (restart_of) recovers from the restarted job's end until work resumes: its first step, or,
        -- without step records, its own start (a lower bound; see recovery_ends_at_first_step).
        case when restarted_job_end_at is not null and start_at is not null
            then greatest({{ seconds_between('restarted_job_end_at', 'coalesce(first_step_at, start_at)') }}, 0)
        end as restart_recovery_seconds,
        -- The part of a recovery the restart held its GPUs for (from its own start): what it costs.
        case when restarted_job_end_at is not null and first_step_at is not null
            then greatest({{ seconds_between(
                'greatest(restarted_job_end_at, start_at)', 'first_step_at') }}, 0) * allocated_gpu_equivalents
        end as preemption_recovery_allocated_gpu_seconds,
        case when restarted_job_end_at is not null and start_at is not null
            then first_step_at is not null end as recovery_ends_at_first_step,
        -- A Kubernetes job preempted or requeued inside its own span waits between losing and regaining its GPUs.
        case when scheduler = 'kubernetes' and restarts > 0 and end_at is not null
            then greatest({{ seconds_between('start_at', 'end_at') }} - occupied_seconds, 0)
        end as requeue_gap_seconds
    from joined
),

gpu_seconds as (
    select
        *,
        -- GPU-equivalents: a MIG instance waits for its slices, not a whole GPU.
        -- A job that did not queue queued no GPU-seconds; one that did, with its requested GPUs unknown (an export
        -- without ReqTRES), queued a number of GPU-seconds that is not known: null, never 0.
        case when queued_seconds = 0 then 0
            else queued_seconds * requested_gpu_equivalents * array_tasks end as queued_gpu_seconds,
        setup_seconds * allocated_gpu_equivalents as setup_gpu_seconds,
        tail_seconds * allocated_gpu_equivalents as tail_gpu_seconds,
        case when restart_recovery_seconds is not null or requeue_gap_seconds is not null
            then (coalesce(restart_recovery_seconds, 0) + coalesce(requeue_gap_seconds, 0)) * allocated_gpu_equivalents
        end as preemption_recovery_gpu_seconds
    from intervals
)

select
    *,
    {%- for figure in ['setup', 'data_and_sync_wait', 'hang_after_fault', 'tail', 'preemption_recovery_allocated'] %}
    case when {{ figure }}_gpu_seconds is not null and occupied_gpu_seconds > 0
        then {{ money_share(
            'compute_cost', 'least(' ~ figure ~ '_gpu_seconds, occupied_gpu_seconds)', 'occupied_gpu_seconds') }}
    end as {{ figure | replace('_allocated', '') }}_cost{% if not loop.last %},{% endif %}
    {%- endfor %}
from gpu_seconds
