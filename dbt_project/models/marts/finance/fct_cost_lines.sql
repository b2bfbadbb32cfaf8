-- Every cost of a batch as lines (R9): one row per batch x phase x month x cost type x source x detail x evidence
-- level. Compute on owned GPUs is measured (occupied GPU-time at the internal price, int_job_months_costed);
-- cloud lines are billed at EffectiveCost (pending without an invoice) and count as compute unless their
-- ServiceCategory is Storage; storage is measured from inventories (size x time x price, by purpose); labour is
-- hours x each person's cost rate (measured) or an assumed rate with a low/high range; external services are
-- billed invoices or pending accruals with a range. Each line's amount is rounded to the cent once; every total
-- above (fct_batch_costs) is a sum of these lines. rerun_amount is the part of a compute line spent on reruns,
-- already inside amount. Lines not tied to a phase carry phase 'batch_level'.
with jobs as (
    select costed.job_id, costed.is_rerun, reviewed.review_class
    from {{ ref('int_jobs_costed') }} as costed
    inner join {{ ref('int_jobs_reviewed') }} as reviewed on costed.job_id = reviewed.job_id
),

labour_review as (
    select contract_version, code as labour_category, category as review_class
    from {{ ref('stg_contract__enumerations') }}
    where enumeration = 'review_labour_category'
),

owned_compute as (
    select
        costs.batch_id,
        costs.phase,
        costs.month_start,
        'compute' as cost_type,
        'owned_capacity' as cost_source,
        'gpu_time' as cost_detail,
        cast(null as {{ dbt.type_string() }}) as labour_category,
        'measured' as evidence_level,
        jobs.review_class,
        costs.compute_cost as amount,
        costs.compute_cost as amount_low,
        costs.compute_cost as amount_high,
        case when jobs.is_rerun then costs.compute_cost else 0 end as rerun_amount,
        costs.occupied_gpu_seconds / 3600.0 as gpu_hours,
        0 as labour_hours,
        cast(null as {{ dbt.type_string() }}) as person_key,
        false as is_correction
    from {{ ref('int_job_months_costed') }} as costs
    inner join jobs on costs.job_id = jobs.job_id
    where costs.cost_source = 'owned_capacity' and not costs.is_unpriced
),

cloud as (
    select
        charges.batch_id,
        coalesce(charges.phase, 'batch_level') as phase,
        charges.month_start,
        case when charges.service_category = 'Storage' then 'storage' else 'compute' end as cost_type,
        'cloud_bill' as cost_source,
        coalesce(charges.service_name, charges.service_category, 'unspecified') as cost_detail,
        cast(null as {{ dbt.type_string() }}) as labour_category,
        case when charges.invoice_id is null then 'pending' else 'billed' end as evidence_level,
        coalesce(jobs.review_class, 'planned_work') as review_class,
        charges.effective_cost as amount,
        charges.effective_cost as amount_low,
        charges.effective_cost as amount_high,
        case when jobs.is_rerun then charges.effective_cost else 0 end as rerun_amount,
        0 as gpu_hours,
        0 as labour_hours,
        cast(null as {{ dbt.type_string() }}) as person_key,
        charges.is_correction
    from {{ ref('int_focus_charges_attributed') }} as charges
    left join jobs on charges.job_id = jobs.job_id
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
        storage_cost as amount,
        storage_cost as amount_low,
        storage_cost as amount_high,
        0 as rerun_amount,
        0 as gpu_hours,
        0 as labour_hours,
        cast(null as {{ dbt.type_string() }}) as person_key,
        false as is_correction
    from {{ ref('int_storage_objects_costed') }}
    where not is_unpriced
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
        coalesce(labour_review.review_class, 'planned_work') as review_class,
        labour.labour_cost as amount,
        labour.labour_cost_low as amount_low,
        labour.labour_cost_high as amount_high,
        0 as rerun_amount,
        0 as gpu_hours,
        labour.hours as labour_hours,
        labour.person_key,
        false as is_correction
    from {{ ref('int_labour_costed') }} as labour
    left join labour_review
        on labour.category = labour_review.labour_category
        and labour.contract_version = labour_review.contract_version
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
        false as is_correction
    from {{ ref('int_service_invoices_costed') }}
),

all_lines as (
    select * from owned_compute
    union all
    select * from cloud
    union all
    select * from storage
    union all
    select * from labour
    union all
    select * from services
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
        cast(round(sum(amount), 2) as decimal(18, 2)) as amount,
        cast(round(sum(amount_low), 2) as decimal(18, 2)) as amount_low,
        cast(round(sum(amount_high), 2) as decimal(18, 2)) as amount_high,
        cast(round(sum(rerun_amount), 2) as decimal(18, 2)) as rerun_amount,
        cast(sum(gpu_hours) as decimal(18, 4)) as gpu_hours,
        cast(sum(labour_hours) as decimal(18, 2)) as labour_hours,
        cast(count(distinct person_key) as bigint) as people,
        cast(count(*) as bigint) as source_rows,
        max(case when is_correction then 1 else 0 end) = 1 as has_correction
    from all_lines
    group by
        batch_id, phase, month_start, cost_type, cost_source, cost_detail, labour_category, evidence_level, review_class
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
    grouped.has_correction
from grouped
left join batches on grouped.batch_id = batches.batch_id
