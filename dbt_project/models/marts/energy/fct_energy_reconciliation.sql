-- The facility power bill per month against the measured energy (docs/energy.md): one row per batch with measured
-- facility energy in the month (its GPU energy x PUE, priced at the month's electricity price) and one 'gap' row,
-- the bill less those costs, so every month's rows add up to its power bill exactly. The ledger gives the bill in
-- money only, so the gap's energy (CPUs, network, cooling beyond PUE, GPUs no sample stands for) cannot be
-- measured: its kWh are null. A month with measured energy but no power bill has null costs.
with job_months as (
    select * from {{ ref('int_job_energy_months_costed') }}
    where facility_kwh is not null
),

power_bills as (
    select * from {{ ref('int_power_bills_monthly') }}
),

batches as (
    select
        month_start,
        batch_id,
        max(contract_version) as contract_version,
        sum(gpu_kwh) as gpu_kwh,
        sum(idle_gpu_kwh) as idle_gpu_kwh,
        sum(facility_kwh) as facility_kwh,
        sum(energy_cost_cents) as energy_cost_cents,
        sum(counter_observed_gpu_seconds) as counter_observed_gpu_seconds,
        sum(power_observed_gpu_seconds) as power_observed_gpu_seconds
    from job_months
    group by month_start, batch_id
),

months as (
    select month_start from power_bills
    union
    select month_start from batches
),

parts as (
    select
        batches.month_start,
        'batch' as part,
        batches.batch_id,
        batches.contract_version,
        batches.gpu_kwh,
        batches.idle_gpu_kwh,
        batches.facility_kwh,
        batches.energy_cost_cents,
        {{ energy_method('batches.counter_observed_gpu_seconds', 'batches.power_observed_gpu_seconds') }}
            as energy_method
    from batches
    union all
    select
        months.month_start,
        'gap' as part,
        cast(null as {{ dbt.type_string() }}) as batch_id,
        {{ latest_contract_version() }} as contract_version,
        cast(null as {{ dbt.type_float() }}) as gpu_kwh,
        cast(null as {{ dbt.type_float() }}) as idle_gpu_kwh,
        cast(null as {{ dbt.type_float() }}) as facility_kwh,
        power_bills.power_bill_cents - coalesce(sum(batches.energy_cost_cents), 0) as energy_cost_cents,
        cast(null as {{ dbt.type_string() }}) as energy_method
    from months
    left join power_bills on months.month_start = power_bills.month_start
    left join batches on months.month_start = batches.month_start
    group by months.month_start, power_bills.power_bill_cents
)

select
    parts.month_start,
    parts.part,
    parts.batch_id,
    parts.contract_version,
    cast(parts.gpu_kwh as decimal(18, 4)) as gpu_kwh,
    cast(parts.idle_gpu_kwh as decimal(18, 4)) as idle_gpu_kwh,
    cast(parts.facility_kwh as decimal(18, 4)) as facility_kwh,
    cast(power_bills.power_bill_cents / 100.0 as decimal(18, 2)) as power_bill,
    cast(parts.energy_cost_cents / 100.0 as decimal(18, 2)) as energy_cost,
    parts.energy_method,
    {{ reporting_currency() }} as currency
from parts
left join power_bills on parts.month_start = power_bills.month_start
