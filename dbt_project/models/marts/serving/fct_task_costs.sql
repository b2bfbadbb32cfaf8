-- Cost per task (R14): every attempt, retry, escalation and human hand-off of a task, and whether it succeeded.
-- A task with an unpriced request (its model-month spend is not known) has a null request and task cost.
select
    task_id,
    task_category,
    routed_model,
    contract_version,
    cast(attempts as bigint) as attempts,
    cast(retries as bigint) as retries,
    cast(escalations as bigint) as escalations,
    cast(unpriced_requests as bigint) as unpriced_requests,
    human_handoff,
    cast(request_cost_cents / 100.0 as decimal(18, 2)) as request_cost,
    cast(human_cost_cents / 100.0 as decimal(18, 2)) as human_cost,
    cast((request_cost_cents + human_cost_cents) / 100.0 as decimal(18, 2)) as task_cost,
    succeeded,
    has_outcome,
    judged_by,
    {{ reporting_currency() }} as currency
from {{ ref('int_tasks_costed') }}
