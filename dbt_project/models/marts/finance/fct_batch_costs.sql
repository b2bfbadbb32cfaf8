-- The full cost of each batch (R9), one row per batch of dim_batches (the unattributed bucket included): the
-- sums of its lines in fct_cost_lines. total_cost = compute + storage + labour + services; rerun_cost is the
-- part of compute_cost spent on reruns, shown apart and not added again. Cloud lines count at EffectiveCost.
-- The evidence columns split total_cost by evidence level; low/high add up each line's range.
-- No silent zero: a batch with an unpriced line has is_unpriced and a null total_cost (low, high) - never the sum of
-- the priced lines shown as a total. An unpriced compute line (its hours in unpriced_gpu_hours) nulls compute_cost
-- and rerun_cost; an owned line without an internal GPU-hour price for its month also owned_compute_cost and
-- measured_cost; a job on a rented cluster whose bill has not arrived (pending, no amount) cloud_compute_cost and
-- pending_cost. An object in a storage class without a price nulls storage_cost and measured_cost. The other
-- parts stay. running_jobs counts the batch's jobs still running:
-- their compute is what they occupied until their export saw them running, so compute_cost and total_cost are so
-- far (provisional), final once every job has ended.
{%- set unpriced_nulls = {
    'compute_cost': 'is_compute_unpriced', 'rerun_cost': 'is_compute_unpriced', 'total_cost': 'is_unpriced',
    'total_cost_low': 'is_unpriced', 'total_cost_high': 'is_unpriced',
    'owned_compute_cost': 'is_owned_unpriced', 'measured_cost': 'is_measured_unpriced',
    'cloud_compute_cost': 'is_cloud_pending', 'pending_cost': 'is_cloud_pending',
    'storage_cost': 'is_storage_unpriced'} %}

with lines as (
    select * from {{ ref('fct_cost_lines') }}
),

people as (
    select
        batch_id,
        count(distinct person_key) as labour_people,
        -- R20: the people whose own cost rate is in labour_cost. An assumed rate is the contract's and its hours
        -- are published, so the assumed part of labour_cost can be worked out: the small-group rule counts these.
        count(distinct case when evidence_level = 'measured' then person_key end) as labour_measured_people,
        sum(hours) as labour_hours
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
        max(case when has_correction then 1 else 0 end) = 1 as has_correction,
        max(case when is_unpriced then 1 else 0 end) = 1 as is_unpriced,
        max(case when is_unpriced and cost_type = 'compute' then 1 else 0 end) = 1 as is_compute_unpriced,
        max(case when is_unpriced and cost_source = 'owned_capacity' then 1 else 0 end) = 1 as is_owned_unpriced,
        max(case when is_unpriced and evidence_level = 'measured' then 1 else 0 end) = 1 as is_measured_unpriced,
        max(case when is_unpriced and cost_type = 'storage' then 1 else 0 end) = 1 as is_storage_unpriced,
        max(case when is_unpriced and cost_source = 'cloud_bill' then 1 else 0 end) = 1 as is_cloud_pending,
        sum(case when is_unpriced then gpu_hours else 0 end) as unpriced_gpu_hours
    from lines
    group by batch_id
),

running as (
    select batch_id, sum(case when is_running then 1 else 0 end) as running_jobs
    from {{ ref('int_jobs_attributed') }}
    group by batch_id
),

batches as (
    select batch_id, contract_version from {{ ref('dim_batches') }}
)

select
    batches.batch_id,
    batches.contract_version,
    {%- for column in ['compute_cost', 'owned_compute_cost', 'cloud_compute_cost', 'storage_cost', 'labour_cost',
                       'services_cost', 'rerun_cost', 'total_cost', 'total_cost_low', 'total_cost_high',
                       'billed_cost', 'measured_cost', 'assumed_cost', 'pending_cost'] %}
    {%- if column in unpriced_nulls %}
    case when not coalesce(totals.{{ unpriced_nulls[column] }}, false)
        then cast(coalesce(totals.{{ column }}, 0) as decimal(18, 2)) end as {{ column }},
    {%- else %}
    cast(coalesce(totals.{{ column }}, 0) as decimal(18, 2)) as {{ column }},
    {%- endif %}
    {%- endfor %}
    case
        when coalesce(totals.total_cost, 0) = 0 and not coalesce(totals.is_unpriced, false) then 'none'
        when totals.pending_cost <> 0 or totals.is_cloud_pending then 'pending'
        when totals.assumed_cost <> 0 then 'assumed'
        when totals.measured_cost <> 0 or totals.is_unpriced then 'measured'
        else 'billed'
    end as weakest_evidence_level,
    cast(coalesce(people.labour_hours, 0) as decimal(18, 2)) as labour_hours,
    cast(coalesce(people.labour_people, 0) as bigint) as labour_people,
    cast(coalesce(people.labour_measured_people, 0) as bigint) as labour_measured_people,
    coalesce(totals.has_correction, false) as has_correction,
    coalesce(totals.is_unpriced, false) as is_unpriced,
    cast(coalesce(totals.unpriced_gpu_hours, 0) as decimal(18, 4)) as unpriced_gpu_hours,
    cast(coalesce(running.running_jobs, 0) as bigint) as running_jobs,
    {{ reporting_currency() }} as currency
from batches
left join totals on batches.batch_id = totals.batch_id
left join people on batches.batch_id = people.batch_id
left join running on batches.batch_id = running.batch_id
