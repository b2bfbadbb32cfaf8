-- Avoidable compute per job (R24), split so that no GPU-second is counted twice and the categories of a job never
-- add up to more than its compute_cost (the bill's price: the job's avoidable amount = compute_cost x its avoidable
-- GPU-seconds / occupied GPU-seconds, rounded once to the cent, then shared among the categories by their GPU-seconds
-- to the cent, largest remainder, so they add up to it). In order of precedence:
--   avoidable_rerun   the whole job when the review classes it avoidable_rework (R18, int_jobs_reviewed);
--   over_requested    allocated GPUs whose every device sample is idle (requested - occupied GPUs), whole;
--   discarded_steps   discarded step time x the GPUs that worked, share d of their time;
--   idle              idle samples on the GPUs that worked, outside discarded steps (x (1 - d));
--   comm_wait_excess  communication wait above the batch's phase median share of occupied time, x (1 - d).
-- A MIG instance is a GPU here as its share of one (gpu_share, docs/fractional_gpus.md).
-- d assumes idle and wait are spread evenly over discarded and kept steps (no sample-to-step join).
with jobs as (
    select
        job_key, job_id, batch_id, phase, occupied_gpu_seconds, compute_cost, allocated_gpu_equivalents, samples,
        idle_gpu_seconds, comm_wait_gpu_seconds, start_at, end_at
    from {{ ref('int_jobs_costed') }}
    where occupied_gpu_seconds > 0 and compute_cost is not null
),

reviewed as (
    select job_key, review_class from {{ ref('int_jobs_reviewed') }}
),

gpus as (
    select
        job_key,
        cluster,
        hostname,
        gpu_index,
        gpu_instance_id,
        max(gpu_share) as gpu_share,
        max(case when tier <> 'idle' then 1 else 0 end) as was_active,
        sum(represented_gpu_seconds) as represented_gpu_seconds
    from {{ ref('int_device_samples_tiered') }}
    group by job_key, cluster, hostname, gpu_index, gpu_instance_id
),

unused_gpus as (
    select
        job_key,
        sum(case when was_active = 0 then gpu_share else 0 end) as unused_gpus,
        sum(case when was_active = 0 then represented_gpu_seconds else 0 end) as unused_gpu_seconds
    from gpus
    group by job_key
),

discarded as (
    select job_key, sum(step_seconds) as discarded_seconds
    from {{ ref('int_training_steps_attributed') }}
    where discarded_reason is not null and job_key is not null
    group by job_key
),

comm_shares as (
    select
        jobs.*,
        case when jobs.samples > 0 then 1.0 * jobs.comm_wait_gpu_seconds / jobs.occupied_gpu_seconds end
            as comm_wait_share
    from jobs
),

phase_medians as (
    select batch_id, phase, {{ median('comm_wait_share') }} as median_comm_wait_share
    from comm_shares
    where comm_wait_share is not null
    group by batch_id, phase
),

measured as (
    select
        comm_shares.job_key,
        comm_shares.job_id,
        comm_shares.batch_id,
        comm_shares.phase,
        comm_shares.occupied_gpu_seconds,
        comm_shares.compute_cost,
        coalesce(reviewed.review_class = 'avoidable_rework', false) as is_avoidable_rerun,
        coalesce(unused_gpus.unused_gpu_seconds, 0) as unused_gpu_seconds,
        comm_shares.occupied_gpu_seconds - coalesce(unused_gpus.unused_gpu_seconds, 0) as worked_gpu_seconds,
        coalesce(discarded.discarded_seconds, 0)
            * (comm_shares.allocated_gpu_equivalents - coalesce(unused_gpus.unused_gpus, 0)) as discarded_gpu_seconds,
        comm_shares.idle_gpu_seconds - coalesce(unused_gpus.unused_gpu_seconds, 0) as worked_idle_gpu_seconds,
        greatest(comm_shares.comm_wait_gpu_seconds
            - coalesce(phase_medians.median_comm_wait_share, 0) * comm_shares.occupied_gpu_seconds, 0)
            as comm_wait_excess_gpu_seconds
    from comm_shares
    left join reviewed on comm_shares.job_key = reviewed.job_key
    left join unused_gpus on comm_shares.job_key = unused_gpus.job_key
    left join discarded on comm_shares.job_key = discarded.job_key
    left join phase_medians
        on comm_shares.batch_id = phase_medians.batch_id
        and comm_shares.phase = phase_medians.phase
),

shared as (
    select
        measured.*,
        case when worked_gpu_seconds > 0
            then least(1.0 * discarded_gpu_seconds / worked_gpu_seconds, 1.0) else 0 end as discarded_share
    from measured
),

split as (
    select
        job_key,
        job_id,
        batch_id,
        phase,
        occupied_gpu_seconds,
        compute_cost,
        case when is_avoidable_rerun then occupied_gpu_seconds else 0 end as avoidable_rerun_gpu_seconds,
        case when is_avoidable_rerun then 0 else unused_gpu_seconds end as over_requested_gpu_seconds,
        case when is_avoidable_rerun then 0 else worked_gpu_seconds * discarded_share end
            as discarded_steps_gpu_seconds,
        case when is_avoidable_rerun then 0 else worked_idle_gpu_seconds * (1 - discarded_share) end
            as idle_gpu_seconds,
        case when is_avoidable_rerun then 0 else comm_wait_excess_gpu_seconds * (1 - discarded_share) end
            as comm_wait_excess_gpu_seconds
    from shared
),
{%- set categories = ['avoidable_rerun', 'over_requested', 'discarded_steps', 'idle', 'comm_wait_excess'] %}
{%- set avoidable_gpu_seconds = categories | join('_gpu_seconds + ') ~ '_gpu_seconds' %}

-- One row per job and category, each carrying the job's avoidable amount in cents (rounded once). Its GPU-seconds
-- are capped at the occupied ones: samples can stand for more (a MIG slice's occupied GPU-seconds are rounded, a
-- host's unlabelled idle GPUs are all attributed to its one job), and the categories must not cost more than the job.
parts as (
    {%- for category in categories %}
    select
        job_key,
        '{{ category }}' as category,
        {{ category }}_gpu_seconds as gpu_seconds,
        cast({{ money_share('compute_cost', 'least(' ~ avoidable_gpu_seconds ~ ', occupied_gpu_seconds)',
            'occupied_gpu_seconds') }} * 100 as bigint) as avoidable_cents
    from split
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
),

allocated as (
    {{ largest_remainder_cents('parts', ['job_key'], 'avoidable_cents', 'gpu_seconds', 'category') }}
),

by_job as (
    select
        job_key,
        {%- for category in categories %}
        max(case when category = '{{ category }}' then allocated_cents end) as {{ category }}_cents
        {%- if not loop.last %},{% endif %}
        {%- endfor %}
    from allocated
    group by job_key
)

select
    split.job_key,
    split.job_id,
    split.batch_id,
    split.phase,
    split.occupied_gpu_seconds,
    split.compute_cost,
    {%- for category in categories %}
    split.{{ category }}_gpu_seconds,
    cast(by_job.{{ category }}_cents / 100.0 as decimal(18, 2)) as {{ category }}_cost{% if not loop.last %},{% endif %}
    {%- endfor %}
from split
inner join by_job on split.job_key = by_job.job_key
