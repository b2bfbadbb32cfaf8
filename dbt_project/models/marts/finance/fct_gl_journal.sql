-- The general-ledger journal as tonight's figures state it: one line per month x cost centre x GL account, built
-- from int_gl_postings (fct_cost_lines by month x batch x cost type, so it sums to fct_batch_costs). Each batch's
-- cost type debits its expense account and credits its balancing account, both in its cost centre, as the newest
-- contract version's general_ledger maps them (the batch's own entry, else its team's, else the fallback, which also
-- carries the unattributed bucket): every month, and every cost centre in it, balances. A line's net amount
-- (debit - credit) is summed first and then shown on one side, so a net credit (a refund, a correction) is a credit
-- on the expense account.
-- No silent zero: an unpriced cost line (is_unpriced, null amount) adds nothing to debit or credit and is counted
-- in unpriced_lines and unpriced_gpu_hours of the lines it would post to, which are flagged is_unpriced. A line
-- that posts nothing (net 0.00) and has no unpriced cost is left out.
-- Closing a month and the adjustments after a restatement are cost-pipeline journal/close (cost_pipeline/journal.py).
with batch_postings as (
    select * from {{ ref('int_gl_postings') }}
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
        unpriced_lines,
        unpriced_gpu_hours
    from batch_postings

    union all

    select
        month,
        cost_centre,
        balancing_account as gl_account,
        balancing_account_name as account_name,
        'balancing' as account_role,
        cast(null as {{ dbt.type_string() }}) as cost_type,
        -amount as net_amount,
        unpriced_lines,
        unpriced_gpu_hours
    from batch_postings
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
        cast(sum(unpriced_lines) as bigint) as unpriced_lines,
        cast(sum(unpriced_gpu_hours) as decimal(18, 4)) as unpriced_gpu_hours
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
