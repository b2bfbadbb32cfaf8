-- Every task with all it took (R14): each attempt and retry, escalations to a larger model, hand-offs to a
-- person and the person's time, and whether it finally succeeded. The model a task was routed to first is its
-- routing choice. A task with an unpriced request (its model-month spend is not known) has a null request cost,
-- never the sum of its priced requests.
with requests as (
    select * from {{ ref('int_requests_costed') }}
    where task_id is not null
),

first_attempts as (
    select task_id, model as routed_model
    from (
        select task_id, model, row_number() over (partition by task_id order by attempt, requested_at, request_id)
            as attempt_order
        from requests
    ) as ordered
    where attempt_order = 1
),

request_totals as (
    select
        task_id,
        count(*) as attempts,
        cast(sum(case when escalated_to is not null then 1 else 0 end) as bigint) as escalations,
        max(case when human_handoff then 1 else 0 end) = 1 as human_handoff,
        cast({{ sum_when_known('request_cost_cents') }} as bigint) as request_cost_cents,
        cast(sum(case when is_unpriced then 1 else 0 end) as bigint) as unpriced_requests,
        max(contract_version) as contract_version
    from requests
    group by task_id
),

outcomes as (
    select * from {{ ref('stg_tasks__outcomes') }}
)

select
    request_totals.task_id,
    coalesce(outcomes.task_category, 'uncategorised') as task_category,
    first_attempts.routed_model,
    request_totals.attempts,
    request_totals.attempts - 1 as retries,
    request_totals.escalations,
    request_totals.human_handoff or coalesce(outcomes.human_minutes, 0) > 0 as human_handoff,
    request_totals.request_cost_cents,
    request_totals.unpriced_requests,
    cast(round(coalesce(outcomes.human_minutes, 0) * coalesce(outcomes.human_cost_per_hour, 0) / 60.0 * 100, 0)
        as bigint) as human_cost_cents,
    outcomes.task_id is not null as has_outcome,
    request_totals.contract_version,
    coalesce(outcomes.succeeded, false) as succeeded,
    outcomes.judged_by
from request_totals
inner join first_attempts on request_totals.task_id = first_attempts.task_id
left join outcomes on request_totals.task_id = outcomes.task_id
