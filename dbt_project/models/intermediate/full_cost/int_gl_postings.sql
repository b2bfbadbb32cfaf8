-- What each batch's cost type posts to the general ledger in a month (R12): one row per month x batch x cost type,
-- the priced amount of its fct_cost_lines rows, and the cost centre and accounts it posts to. The mapping is the
-- newest contract version's general_ledger (the batch's own cost centre, else its team's, else the fallback, which
-- also carries the unattributed bucket): a cost-centre move or a new account applies to every posting made after
-- the version ships, whatever version the batch was registered with. Months posted before it are not rewritten:
-- cost-pipeline journal/close keep what was posted (cost_pipeline/journal.py). fct_gl_journal sums these rows by
-- cost centre and account.
-- No silent zero: an unpriced cost line adds nothing to amount and is counted in unpriced_lines and
-- unpriced_gpu_hours.
with lines as (
    select * from {{ ref('fct_cost_lines') }}
),

batches as (
    select batch_id, team from {{ ref('dim_batches') }}
),

latest_contract as (
    select {{ latest_contract_version() }} as contract_version
),

grouped as (
    select
        month,
        batch_id,
        cost_type,
        cast(coalesce(sum(amount), 0) as decimal(18, 2)) as amount,
        cast(sum(case when is_unpriced then 1 else 0 end) as bigint) as unpriced_lines,
        cast(sum(case when is_unpriced then gpu_hours else 0 end) as decimal(18, 4)) as unpriced_gpu_hours
    from lines
    group by month, batch_id, cost_type
)

select
    grouped.month,
    grouped.batch_id,
    grouped.cost_type,
    coalesce(batch_centre.category, team_centre.category, fallback_centre.category) as cost_centre,
    expense.category as expense_account,
    expense.description as expense_account_name,
    balancing.category as balancing_account,
    balancing.description as balancing_account_name,
    grouped.amount,
    grouped.unpriced_lines,
    grouped.unpriced_gpu_hours,
    latest_contract.contract_version,
    {{ reporting_currency() }} as currency
from grouped
cross join latest_contract
left join batches on grouped.batch_id = batches.batch_id
{{ join_contract_enumeration('batch_centre', 'gl_batch_cost_centre', 'latest_contract.contract_version',
                             code='grouped.batch_id') }}
{{ join_contract_enumeration('team_centre', 'gl_team_cost_centre', 'latest_contract.contract_version',
                             code='batches.team') }}
{{ join_contract_enumeration('fallback_centre', 'gl_fallback_cost_centre', 'latest_contract.contract_version') }}
{{ join_contract_enumeration('expense', 'gl_expense_account', 'latest_contract.contract_version',
                             code='grouped.cost_type') }}
{{ join_contract_enumeration('balancing', 'gl_balancing_account', 'latest_contract.contract_version',
                             code='grouped.cost_type') }}
