-- The seam every cost of a batch passes through (R9): one row per source row, classified into the columns of
-- fct_cost_lines. Each cost source is one CTE below and one branch of the union at the end; a new source plugs in
-- by adding both. Compute on owned GPUs is measured (occupied GPU-time at the internal price,
-- int_job_months_costed); cloud lines are billed at EffectiveCost (pending without an invoice) and count as compute
-- unless their ServiceCategory is Storage; storage is measured from inventories (size x time x price, by purpose);
-- labour is hours x each person's cost rate (measured) or an assumed rate with a low/high range, in the review class
-- the batch's contract gives its category; external services are billed invoices or pending accruals with a range.
-- rerun_amount is the part of a compute row spent on reruns, already inside amount. Rows not tied to a phase carry
-- phase 'batch_level'. Amounts are unrounded here: fct_cost_lines rounds each line to the cent once.
-- No silent zero: owned compute in a month without an internal GPU-hour price (int_job_months_costed.is_unpriced)
-- is a row too, with its GPU-hours, a null amount (and range, and rerun_amount for a rerun) and is_unpriced true,
-- so that every total built on it is null and flagged rather than the sum of the priced part. So is a job on a
-- rented cluster that no FOCUS line bills yet (cost_source cloud_bill, evidence pending, its GPU-hours, no amount),
-- and an object in a storage class without a price (int_storage_objects_costed.is_unpriced: no amount, never 0).
with jobs as (
    select costed.job_key, costed.is_rerun, reviewed.review_class
    from {{ ref('int_jobs_costed') }} as costed
    inner join {{ ref('int_jobs_reviewed') }} as reviewed on costed.job_key = reviewed.job_key
),

job_compute as (
    select
        costs.batch_id,
        costs.phase,
        costs.month_start,
        'compute' as cost_type,
        costs.cost_source,
        'gpu_time' as cost_detail,
        cast(null as {{ dbt.type_string() }}) as labour_category,
        case when costs.cost_source = 'owned_capacity' then 'measured' else 'pending' end as evidence_level,
        jobs.review_class,
        costs.compute_cost as amount,
        costs.compute_cost as amount_low,
        costs.compute_cost as amount_high,
        case when jobs.is_rerun then costs.compute_cost else 0 end as rerun_amount,
        costs.occupied_gpu_seconds / 3600.0 as gpu_hours,
        0 as labour_hours,
        cast(null as {{ dbt.type_string() }}) as person_key,
        false as is_correction,
        costs.is_unpriced
    from {{ ref('int_job_months_costed') }} as costs
    inner join jobs on costs.job_key = jobs.job_key
    where costs.cost_source = 'owned_capacity' or costs.is_unpriced
),

cloud as (
    select
        charges.batch_id,
        coalesce(charges.phase, 'batch_level') as phase,
        charges.month_start,
        case when {{ is_cloud_compute('charges.service_category') }} then 'compute' else 'storage' end as cost_type,
        'cloud_bill' as cost_source,
        coalesce(charges.service_name, charges.service_category, 'unspecified') as cost_detail,
        cast(null as {{ dbt.type_string() }}) as labour_category,
        case when charges.invoice_id is null then 'pending' else 'billed' end as evidence_level,
        coalesce(jobs.review_class, 'planned_work') as review_class,
        -- The line's whole cents (int_focus_charges_attributed): every book sums the same cents.
        cast(charges.effective_cost_cents / 100.0 as decimal(18, 2)) as amount,
        cast(charges.effective_cost_cents / 100.0 as decimal(18, 2)) as amount_low,
        cast(charges.effective_cost_cents / 100.0 as decimal(18, 2)) as amount_high,
        case when jobs.is_rerun then cast(charges.effective_cost_cents / 100.0 as decimal(18, 2)) else 0 end
            as rerun_amount,
        0 as gpu_hours,
        0 as labour_hours,
        cast(null as {{ dbt.type_string() }}) as person_key,
        charges.is_correction,
        false as is_unpriced
    from {{ ref('int_focus_charges_attributed') }} as charges
    left join jobs on charges.job_key = jobs.job_key
),

storage as (
    select
        batch_id,
        'batch_level' as phase,
        month_start,
        'storage' as cost_type,
        'storage_inventory' as cost_source,
        coalesce(purpose, 'no_purpose') as cost_detail,
        cast(null as {{ dbt.type_string() }}) as labour_category,
        'measured' as evidence_level,
        'planned_work' as review_class,
        case when not is_unpriced then storage_cost end as amount,
        case when not is_unpriced then storage_cost end as amount_low,
        case when not is_unpriced then storage_cost end as amount_high,
        0 as rerun_amount,
        0 as gpu_hours,
        0 as labour_hours,
        cast(null as {{ dbt.type_string() }}) as person_key,
        false as is_correction,
        is_unpriced
    from {{ ref('int_storage_objects_costed') }}
),

labour as (
    select
        labour.batch_id,
        'batch_level' as phase,
        labour.month_start,
        'labour' as cost_type,
        'timesheet' as cost_source,
        labour.role as cost_detail,
        labour.category as labour_category,
        labour.evidence_level,
        coalesce(labour_review.category, 'planned_work') as review_class,
        labour.labour_cost as amount,
        labour.labour_cost_low as amount_low,
        labour.labour_cost_high as amount_high,
        0 as rerun_amount,
        0 as gpu_hours,
        labour.hours as labour_hours,
        labour.person_key,
        false as is_correction,
        false as is_unpriced
    from {{ ref('int_labour_costed') }} as labour
    {{ join_contract_enumeration('labour_review', 'review_labour_category', 'labour.contract_version',
                                 code='labour.category') }}
),

services as (
    select
        batch_id,
        'batch_level' as phase,
        month_start,
        'services' as cost_type,
        'vendor_invoice' as cost_source,
        stage as cost_detail,
        cast(null as {{ dbt.type_string() }}) as labour_category,
        evidence_level,
        'planned_work' as review_class,
        amount,
        amount_low,
        amount_high,
        0 as rerun_amount,
        0 as gpu_hours,
        0 as labour_hours,
        cast(null as {{ dbt.type_string() }}) as person_key,
        false as is_correction,
        false as is_unpriced
    from {{ ref('int_service_invoices_costed') }}
)

select * from job_compute
union all
select * from cloud
union all
select * from storage
union all
select * from labour
union all
select * from services
