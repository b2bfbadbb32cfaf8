-- The resource book (R12): usage x internal price by job and model version. Owned GPU time is priced at the
-- month's internal price (its share of capacity cost, int_capacity_costs_allocated); cloud usage is the FOCUS
-- EffectiveCost (amortised, after discounts) of the job the line names, or of the resource when no job does (or
-- the line is a job's storage: int_job_months_costed holds a job's compute lines only).
-- Never added to the cash book or the service book.
with job_costs as (
    select * from {{ ref('int_job_months_costed') }}
),

cloud_lines as (
    select
        month_start,
        batch_id,
        coalesce(resource_id, service_name, 'unspecified') as resource_key,
        sum(effective_cost_cents) as effective_cost_cents,
        -- Unknown when a line has no ListCost: a partial sum would make a partial contract discount.
        {{ sum_when_known('list_cost_cents') }} as list_cost_cents,
        count(*) as charge_lines,
        max(case when is_correction then 1 else 0 end) = 1 as has_correction
    from {{ ref('int_focus_charges_attributed') }}
    where job_id is null or not is_compute
    group by month_start, batch_id, coalesce(resource_id, service_name, 'unspecified')
),

corrected_jobs as (
    select job_key, month_start, max(case when is_correction then 1 else 0 end) = 1 as has_correction
    from {{ ref('int_focus_charges_attributed') }}
    where job_key is not null and is_compute
    group by job_key, month_start
),

batches as (
    select batch_id, model_version, contract_version from {{ ref('dim_batches') }}
),

lines as (
    select
        job_costs.month_start,
        job_costs.batch_id,
        job_costs.phase,
        job_costs.cost_source,
        job_costs.job_id as resource_key,
        job_costs.job_key,
        job_costs.job_id,
        job_costs.occupied_gpu_seconds,
        job_costs.price_per_available_gpu_hour,
        job_costs.compute_cost as resource_cost,
        job_costs.list_cost,
        job_costs.is_unpriced,
        coalesce(corrected_jobs.has_correction, false) as has_correction
    from job_costs
    left join corrected_jobs
        on job_costs.job_key = corrected_jobs.job_key
        and job_costs.month_start = corrected_jobs.month_start
    union all
    select
        month_start,
        batch_id,
        cast(null as {{ dbt.type_string() }}) as phase,
        'cloud_bill' as cost_source,
        resource_key,
        cast(null as {{ dbt.type_string() }}) as job_key,
        cast(null as {{ dbt.type_string() }}) as job_id,
        0 as occupied_gpu_seconds,
        cast(null as double) as price_per_available_gpu_hour,
        cast(effective_cost_cents / 100.0 as decimal(18, 2)) as resource_cost,
        cast(list_cost_cents / 100.0 as decimal(18, 2)) as list_cost,
        false as is_unpriced,
        has_correction
    from cloud_lines
)

select
    lines.month_start as month,
    lines.batch_id,
    batches.model_version,
    coalesce(batches.contract_version, {{ latest_contract_version() }}) as contract_version,
    lines.phase,
    lines.cost_source,
    lines.resource_key,
    lines.job_key,
    lines.job_id,
    cast(lines.occupied_gpu_seconds / 3600.0 as decimal(18, 4)) as occupied_gpu_hours,
    cast(round(lines.price_per_available_gpu_hour, 6) as decimal(18, 6)) as price_per_available_gpu_hour,
    cast(coalesce(lines.resource_cost, 0) as decimal(18, 2)) as resource_cost,
    cast(lines.list_cost as decimal(18, 2)) as list_cost,
    cast(lines.list_cost - coalesce(lines.resource_cost, 0) as decimal(18, 2)) as contract_discount,
    lines.is_unpriced,
    lines.has_correction,
    {{ reporting_currency() }} as currency
from lines
left join batches on lines.batch_id = batches.batch_id
