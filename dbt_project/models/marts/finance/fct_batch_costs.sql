-- The full cost of each batch (R9), one row per batch of dim_batches (the unattributed bucket included): the
-- sums of its lines in fct_cost_lines. total_cost = compute + storage + labour + services; rerun_cost is the
-- part of compute_cost spent on reruns, shown apart and not added again. Cloud lines count at EffectiveCost.
-- The evidence columns split total_cost by evidence level; low/high add up each line's range.
with lines as (
    select * from {{ ref('fct_cost_lines') }}
),

people as (
    select batch_id, count(distinct person_key) as labour_people, sum(hours) as labour_hours
    from {{ ref('int_labour_costed') }}
    group by batch_id
),

totals as (
    select
        batch_id,
        sum(case when cost_type = 'compute' then amount else 0 end) as compute_cost,
        sum(case when cost_type = 'compute' and cost_source = 'owned_capacity' then amount else 0 end)
            as owned_compute_cost,
        sum(case when cost_type = 'compute' and cost_source = 'cloud_bill' then amount else 0 end)
            as cloud_compute_cost,
        sum(case when cost_type = 'storage' then amount else 0 end) as storage_cost,
        sum(case when cost_type = 'labour' then amount else 0 end) as labour_cost,
        sum(case when cost_type = 'services' then amount else 0 end) as services_cost,
        sum(rerun_amount) as rerun_cost,
        sum(amount) as total_cost,
        sum(amount_low) as total_cost_low,
        sum(amount_high) as total_cost_high,
        sum(case when evidence_level = 'billed' then amount else 0 end) as billed_cost,
        sum(case when evidence_level = 'measured' then amount else 0 end) as measured_cost,
        sum(case when evidence_level = 'assumed' then amount else 0 end) as assumed_cost,
        sum(case when evidence_level = 'pending' then amount else 0 end) as pending_cost,
        max(case when has_correction then 1 else 0 end) = 1 as has_correction
    from lines
    group by batch_id
),

batches as (
    select batch_id, contract_version from {{ ref('dim_batches') }}
)

select
    batches.batch_id,
    batches.contract_version,
    cast(coalesce(totals.compute_cost, 0) as decimal(18, 2)) as compute_cost,
    cast(coalesce(totals.owned_compute_cost, 0) as decimal(18, 2)) as owned_compute_cost,
    cast(coalesce(totals.cloud_compute_cost, 0) as decimal(18, 2)) as cloud_compute_cost,
    cast(coalesce(totals.storage_cost, 0) as decimal(18, 2)) as storage_cost,
    cast(coalesce(totals.labour_cost, 0) as decimal(18, 2)) as labour_cost,
    cast(coalesce(totals.services_cost, 0) as decimal(18, 2)) as services_cost,
    cast(coalesce(totals.rerun_cost, 0) as decimal(18, 2)) as rerun_cost,
    cast(coalesce(totals.total_cost, 0) as decimal(18, 2)) as total_cost,
    cast(coalesce(totals.total_cost_low, 0) as decimal(18, 2)) as total_cost_low,
    cast(coalesce(totals.total_cost_high, 0) as decimal(18, 2)) as total_cost_high,
    cast(coalesce(totals.billed_cost, 0) as decimal(18, 2)) as billed_cost,
    cast(coalesce(totals.measured_cost, 0) as decimal(18, 2)) as measured_cost,
    cast(coalesce(totals.assumed_cost, 0) as decimal(18, 2)) as assumed_cost,
    cast(coalesce(totals.pending_cost, 0) as decimal(18, 2)) as pending_cost,
    case
        when coalesce(totals.total_cost, 0) = 0 then 'none'
        when totals.pending_cost <> 0 then 'pending'
        when totals.assumed_cost <> 0 then 'assumed'
        when totals.measured_cost <> 0 then 'measured'
        else 'billed'
    end as weakest_evidence_level,
    cast(coalesce(people.labour_hours, 0) as decimal(18, 2)) as labour_hours,
    cast(coalesce(people.labour_people, 0) as bigint) as labour_people,
    coalesce(totals.has_correction, false) as has_correction
from batches
left join totals on batches.batch_id = totals.batch_id
left join people on batches.batch_id = people.batch_id
