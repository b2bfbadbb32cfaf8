-- Each job-month's measured GPU energy (int_job_energy_measured) with the facility's figures (docs/energy.md):
-- facility energy = GPU energy x the contract's PUE, carbon = facility energy x the grid intensity of the month,
-- and energy cost = facility energy x the month's electricity price (contract energy.price_per_kwh), rounded once
-- to the cent; a month without a price has no energy cost (null). fct_energy_reconciliation sets these against the
-- ledger's power bill and shows the rest as the gap. A job-month with no measured sample has null energy
-- (unobserved); a cloud job's power (billed, or on a rented cluster) is in its cloud price, so it has GPU energy
-- but no facility figures.
with job_months as (
    select
        job_months.job_key,
        job_months.batch_id,
        job_months.phase,
        job_months.month_start,
        job_months.occupied_gpu_seconds,
        job_months.is_cloud,
        jobs.contract_version
    from {{ ref('int_job_months_split') }} as job_months
    inner join {{ ref('int_jobs_attributed') }} as jobs on job_months.job_key = jobs.job_key
),

energy as (
    select
        job_key,
        month_start,
        sum(gpu_kwh) as gpu_kwh,
        sum(case when tier = 'idle' then gpu_kwh else 0 end) as idle_gpu_kwh,
        sum(case when energy_method = 'power' then observed_gpu_seconds else 0 end) as power_observed_gpu_seconds,
        sum(case when energy_method = 'counter' then observed_gpu_seconds else 0 end) as counter_observed_gpu_seconds
    from {{ ref('int_job_energy_measured') }}
    group by job_key, month_start
),

parameters as (
    {{ contract_parameters({'energy_pue': 'pue'}) }}
),

grid_intensities as (
    {{ monthly_contract_parameter('grid_intensity_g_co2e_per_kwh', 'grid_intensity_g_co2e_per_kwh') }}
),

energy_prices as (
    {{ monthly_contract_parameter('energy_price_per_kwh', 'price_per_kwh') }}
),

measured as (
    select
        job_months.*,
        energy.gpu_kwh,
        energy.idle_gpu_kwh,
        coalesce(energy.power_observed_gpu_seconds, 0) as power_observed_gpu_seconds,
        coalesce(energy.counter_observed_gpu_seconds, 0) as counter_observed_gpu_seconds,
        parameters.pue,
        grid_intensities.grid_intensity_g_co2e_per_kwh,
        energy_prices.price_per_kwh,
        case when not job_months.is_cloud then energy.gpu_kwh * parameters.pue end as facility_kwh
    from job_months
    left join energy on job_months.job_key = energy.job_key and job_months.month_start = energy.month_start
    left join parameters on job_months.contract_version = parameters.contract_version
    left join grid_intensities
        on job_months.contract_version = grid_intensities.contract_version
        and job_months.month_start = grid_intensities.month_start
    left join energy_prices
        on job_months.contract_version = energy_prices.contract_version
        and job_months.month_start = energy_prices.month_start
)

select
    measured.job_key,
    measured.batch_id,
    measured.phase,
    measured.month_start,
    measured.contract_version,
    measured.is_cloud,
    measured.occupied_gpu_seconds,
    measured.power_observed_gpu_seconds,
    measured.counter_observed_gpu_seconds,
    measured.gpu_kwh,
    measured.idle_gpu_kwh,
    measured.pue,
    measured.facility_kwh,
    measured.grid_intensity_g_co2e_per_kwh,
    measured.facility_kwh * measured.grid_intensity_g_co2e_per_kwh / 1000.0 as carbon_kg_co2e,
    measured.price_per_kwh,
    cast(round(measured.facility_kwh * measured.price_per_kwh * 100, 0) as bigint) as energy_cost_cents
from measured
