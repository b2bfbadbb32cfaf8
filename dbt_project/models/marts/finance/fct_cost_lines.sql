-- Every cost of a batch as lines (R9): one row per batch x phase x month x cost type x source x detail x evidence
-- level. The cost sources and how each is classified are in int_cost_lines_unioned; here its rows are summed to the
-- line and each line's amount is rounded to the cent once. Every total above (fct_batch_costs) is a sum of these
-- lines. A line carries the contract version of its batch (the newest shipped for a line without one).
-- Owned compute in a month without an internal GPU-hour price is a line with its GPU-hours, a null amount (range,
-- rerun_amount) and is_unpriced; so is a stored object in a storage class without a price. Unpriced rows are a line
-- of their own (is_unpriced is part of the grain): the priced objects of the same purpose keep their amount beside
-- it, and every total that holds the unpriced line is null (fct_batch_costs).
with cost_rows as (
    select * from {{ ref('int_cost_lines_unioned') }}
),

grouped as (
    select
        batch_id,
        phase,
        month_start,
        cost_type,
        cost_source,
        cost_detail,
        labour_category,
        evidence_level,
        review_class,
        case when not is_unpriced then cast(round(sum(amount), 2) as decimal(18, 2)) end as amount,
        case when not is_unpriced then cast(round(sum(amount_low), 2) as decimal(18, 2)) end as amount_low,
        case when not is_unpriced then cast(round(sum(amount_high), 2) as decimal(18, 2)) end as amount_high,
        case when not is_unpriced then cast(round(sum(rerun_amount), 2) as decimal(18, 2)) end as rerun_amount,
        cast(sum(gpu_hours) as decimal(18, 4)) as gpu_hours,
        cast(sum(labour_hours) as decimal(18, 2)) as labour_hours,
        cast(count(distinct person_key) as bigint) as people,
        cast(count(*) as bigint) as source_rows,
        max(case when is_correction then 1 else 0 end) = 1 as has_correction,
        is_unpriced
    from cost_rows
    group by
        batch_id, phase, month_start, cost_type, cost_source, cost_detail, labour_category, evidence_level,
        review_class, is_unpriced
),

batches as (
    select batch_id, contract_version from {{ ref('dim_batches') }}
)

select
    grouped.batch_id,
    coalesce(batches.contract_version, {{ latest_contract_version() }}) as contract_version,
    grouped.phase,
    grouped.month_start as month,
    grouped.cost_type,
    grouped.cost_source,
    grouped.cost_detail,
    grouped.labour_category,
    grouped.evidence_level,
    grouped.review_class,
    grouped.amount,
    grouped.amount_low,
    grouped.amount_high,
    grouped.rerun_amount,
    grouped.gpu_hours,
    grouped.labour_hours,
    grouped.people,
    grouped.source_rows,
    grouped.has_correction,
    grouped.is_unpriced,
    {{ reporting_currency() }} as currency
from grouped
left join batches on grouped.batch_id = batches.batch_id
