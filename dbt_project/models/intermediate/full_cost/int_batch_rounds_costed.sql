-- One row per batch x trial round (R18): the compute cost and occupied GPU-hours of the batch's jobs that started
-- in the round's window [started_at, ended_at), whether the round produced new evidence, and how cost moved from
-- the previous round. rounds_without_evidence_streak counts consecutive rounds up to this one without new evidence;
-- rising_cost_without_evidence_streak counts consecutive rounds whose cost rose and that produced no new evidence
-- (the stop signal's input: cost rising round after round without new evidence). compute_cost sums the jobs'
-- already-rounded DECIMAL(18,2) costs, so no further rounding happens here. A round with an unpriced job (no internal
-- GPU-hour price for its month) has a null compute_cost and is_unpriced, never 0 or the sum of its priced jobs.
with rounds as (
    select * from {{ ref('stg_registry__rounds') }}
),

jobs as (
    select batch_id, start_at, occupied_gpu_seconds, compute_cost, has_unpriced_month, unpriced_gpu_seconds
    from {{ ref('int_jobs_costed') }}
),

round_jobs as (
    select
        rounds.batch_id,
        rounds.round_number,
        rounds.started_at,
        rounds.ended_at,
        rounds.evidence,
        count(jobs.start_at) as jobs,
        coalesce(sum(jobs.occupied_gpu_seconds), 0) as occupied_gpu_seconds,
        case when max(case when jobs.has_unpriced_month then 1 else 0 end) = 1 then null
            else coalesce(sum(jobs.compute_cost), cast(0 as decimal(18, 2))) end as compute_cost,
        max(case when jobs.has_unpriced_month then 1 else 0 end) = 1 as is_unpriced,
        coalesce(sum(jobs.unpriced_gpu_seconds), 0) as unpriced_gpu_seconds
    from rounds
    left join jobs
        on jobs.batch_id = rounds.batch_id
        and jobs.start_at >= rounds.started_at
        and jobs.start_at < rounds.ended_at
    group by rounds.batch_id, rounds.round_number, rounds.started_at, rounds.ended_at, rounds.evidence
),

ordered as (
    select
        round_jobs.*,
        evidence is not null as has_new_evidence,
        row_number() over (partition by batch_id order by round_number) as round_index,
        lag(compute_cost) over (partition by batch_id order by round_number) as previous_round_cost
    from round_jobs
),

flagged as (
    select
        ordered.*,
        coalesce(compute_cost > previous_round_cost, false) as cost_rose
    from ordered
),

streaks as (
    select
        flagged.*,
        max(case when has_new_evidence then round_index else 0 end) over (
            partition by batch_id order by round_index rows between unbounded preceding and current row
        ) as last_evidence_index,
        max(case when cost_rose and not has_new_evidence then 0 else round_index end) over (
            partition by batch_id order by round_index rows between unbounded preceding and current row
        ) as last_break_index
    from flagged
)

select
    batch_id,
    round_number,
    started_at,
    ended_at,
    jobs,
    cast(occupied_gpu_seconds / 3600.0 as decimal(18, 4)) as occupied_gpu_hours,
    cast(compute_cost as decimal(18, 2)) as compute_cost,
    is_unpriced,
    cast(unpriced_gpu_seconds / 3600.0 as decimal(18, 4)) as unpriced_gpu_hours,
    has_new_evidence,
    evidence,
    cast(previous_round_cost as decimal(18, 2)) as previous_round_cost,
    cost_rose,
    round_index - last_evidence_index as rounds_without_evidence_streak,
    round_index - last_break_index as rising_cost_without_evidence_streak
from streaks
