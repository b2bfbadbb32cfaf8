{#-
    Cost per successful task at a grain (R14): all that every task cost (attempts, retries, escalations, people)
    over the tasks that succeeded, beside the cost of one call and the success rate, so a cheap model that needs
    retries and rescue is compared with a dear one the way a decision needs it. Failed tasks and hand-offs are
    counted, not hidden. A model or grain with an unpriced call or task (its model-month spend is not known) has a
    null cost per call, task cost and cost per successful task, never a partial sum; unpriced_tasks counts them.
-#}
{% macro task_economics(grain) %}
{%- set keys = grain | join(', ') -%}
with tasks as (
    select * from {{ ref('int_tasks_costed') }}
),

calls as (
    select model, {{ sum_when_known('request_cost_cents') }} as cost_cents, count(*) as calls
    from {{ ref('int_requests_costed') }}
    group by model
),

totals as (
    select
        {{ keys }},
        max(contract_version) as contract_version,
        count(*) as tasks,
        sum(case when succeeded then 1 else 0 end) as tasks_succeeded,
        sum(case when succeeded then 0 else 1 end) as tasks_failed,
        sum(case when human_handoff then 1 else 0 end) as human_handoffs,
        sum(escalations) as escalations,
        sum(attempts) as attempts,
        sum(case when request_cost_cents is null then 1 else 0 end) as unpriced_tasks,
        {{ sum_when_known('request_cost_cents + human_cost_cents') }} as task_cost_cents
    from tasks
    group by {{ keys }}
)

select
    {%- for key in grain %}
    totals.{{ key }},
    {%- endfor %}
    totals.contract_version,
    cast(totals.tasks as bigint) as tasks,
    cast(totals.tasks_succeeded as bigint) as tasks_succeeded,
    cast(totals.tasks_failed as bigint) as tasks_failed,
    cast(totals.human_handoffs as bigint) as human_handoffs,
    cast(totals.escalations as bigint) as escalations,
    cast(totals.attempts as bigint) as attempts,
    cast(totals.unpriced_tasks as bigint) as unpriced_tasks,
    cast(round(cast(totals.tasks_succeeded as double) / totals.tasks, 4) as decimal(18, 4)) as success_rate,
    case when calls.calls > 0 and calls.cost_cents is not null
        then {{ cents_per_unit('calls.cost_cents', 'calls.calls') }}
    end as cost_per_call,
    cast(totals.task_cost_cents / 100.0 as decimal(18, 2)) as task_cost,
    case when totals.tasks_succeeded > 0 and totals.task_cost_cents is not null
        then {{ cents_per_unit('totals.task_cost_cents', 'totals.tasks_succeeded') }}
    end as cost_per_successful_task,
    {{ reporting_currency() }} as currency
from totals
left join calls on totals.routed_model = calls.model
{% endmacro %}
