-- Per model a task was routed to first: success rate, cost of one call and cost per successful task (R14).
with economics as (
    {{ task_economics(['routed_model']) }}
)

select
    routed_model as model,
    contract_version,
    tasks,
    tasks_succeeded,
    tasks_failed,
    human_handoffs,
    escalations,
    attempts,
    unpriced_tasks,
    success_rate,
    cost_per_call,
    task_cost,
    cost_per_successful_task,
    {{ reporting_currency() }} as currency
from economics
