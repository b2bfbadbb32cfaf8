-- The general-ledger journal as tonight's figures state it: one line per month x cost centre x GL account, built
-- from fct_cost_lines (so it sums to fct_batch_costs). Each cost line debits its cost type's expense account and
-- credits its balancing account, both in its batch's cost centre (contract general_ledger: the batch's own entry,
-- else its team's, else the fallback, which also carries the unattributed bucket): every month, and every cost
-- centre in it, balances. A line's net amount (debit - credit) is summed first and then shown on one side, so a
-- net credit (a refund, a correction) is a credit on the expense account.
-- No silent zero: an unpriced cost line (is_unpriced, null amount) adds nothing to debit or credit and is counted
-- in unpriced_lines and unpriced_gpu_hours of the lines it would post to, which are flagged is_unpriced. A line
-- that posts nothing (net 0.00) and has no unpriced cost is left out.
-- Closing a month and the adjustments after a restatement are cost-pipeline journal/close (cost_pipeline/journal.py).
with lines as (
    select * from {{ ref('fct_cost_lines') }}
),

batches as (
    select batch_id, team from {{ ref('dim_batches') }}
),

attributed as (
    select
        lines.month,
        lines.cost_type,
        lines.amount,
        lines.is_unpriced,
        lines.gpu_hours,
        coalesce(batch_centre.category, team_centre.category, fallback_centre.category) as cost_centre,
        expense.category as expense_account,
        expense.description as expense_account_name,
        balancing.category as balancing_account,
        balancing.description as balancing_account_name
    from lines
    left join batches on lines.batch_id = batches.batch_id
    {{ join_contract_enumeration('batch_centre', 'gl_batch_cost_centre', 'lines.contract_version',
                                 code='lines.batch_id') }}
    {{ join_contract_enumeration('team_centre', 'gl_team_cost_centre', 'lines.contract_version',
                                 code='batches.team') }}
    {{ join_contract_enumeration('fallback_centre', 'gl_fallback_cost_centre', 'lines.contract_version') }}
    {{ join_contract_enumeration('expense', 'gl_expense_account', 'lines.contract_version',
                                 code='lines.cost_type') }}
    {{ join_contract_enumeration('balancing', 'gl_balancing_account', 'lines.contract_version',
                                 code='lines.cost_type') }}
),

postings as (
    select
        month,
        cost_centre,
        expense_account as gl_account,
        expense_account_name as account_name,
        'expense' as account_role,
        cost_type,
        amount as net_amount,
        is_unpriced,
        gpu_hours
    from attributed

    union all

    select
        month,
        cost_centre,
        balancing_account as gl_account,
        balancing_account_name as account_name,
        'balancing' as account_role,
        cast(null as {{ dbt.type_string() }}) as cost_type,
        -amount as net_amount,
        is_unpriced,
        gpu_hours
    from attributed
),

summed as (
    select
        month,
        cost_centre,
        gl_account,
        account_role,
        max(account_name) as account_name,
        max(cost_type) as cost_type,
        cast(coalesce(sum(net_amount), 0) as decimal(18, 2)) as net_amount,
        cast(sum(case when is_unpriced then 1 else 0 end) as bigint) as unpriced_lines,
        cast(sum(case when is_unpriced then gpu_hours else 0 end) as decimal(18, 4)) as unpriced_gpu_hours
    from postings
    group by month, cost_centre, gl_account, account_role
)

select
    month,
    cost_centre,
    gl_account,
    account_name,
    account_role,
    cost_type,
    cast(case when net_amount > 0 then net_amount else 0 end as decimal(18, 2)) as debit,
    cast(case when net_amount < 0 then -net_amount else 0 end as decimal(18, 2)) as credit,
    net_amount,
    unpriced_lines > 0 as is_unpriced,
    unpriced_lines,
    unpriced_gpu_hours,
    {{ latest_contract_version() }} as contract_version,
    {{ reporting_currency() }} as currency
from summed
where net_amount <> 0 or unpriced_lines > 0
