-- Energy and carbon per batch and phase (docs/energy.md): the sums of int_job_energy_months_costed. A figure over
-- job-months that are partly unknown is null, never a partial sum passed off as the whole: carbon when a month has
-- no grid intensity, energy cost when a month with facility energy has no power bill. GPU energy sums what was
-- measured (by the GPUs' energy counters, else power x time: energy_method says which); unobserved_gpu_hours says
-- how much occupied time neither stands for, summed job by job: one job's samples standing for more than its occupied
-- time never make up for another job's time without any.
with job_months as (
    select * from {{ ref('int_job_energy_months_costed') }}
),

-- Each job's occupied time that no sample of its own stands for.
job_unobserved as (
    select
        job_key,
        batch_id,
        phase,
        greatest(
            sum(occupied_gpu_seconds) - sum(power_observed_gpu_seconds + counter_observed_gpu_seconds), 0
        ) as unobserved_gpu_seconds
    from job_months
    group by job_key, batch_id, phase
),

phase_unobserved as (
    select batch_id, phase, sum(unobserved_gpu_seconds) as unobserved_gpu_seconds
    from job_unobserved
    group by batch_id, phase
),

batches as (
    select batch_id, contract_version from {{ ref('dim_batches') }}
),

phases as (
    select
        batch_id,
        phase,
        sum(gpu_kwh) as gpu_kwh,
        sum(idle_gpu_kwh) as idle_gpu_kwh,
        sum(facility_kwh) as facility_kwh,
        case when count(facility_kwh) = count(carbon_kg_co2e) then sum(carbon_kg_co2e) end as carbon_kg_co2e,
        case
            when count(case when facility_kwh > 0 then 1 end) = count(case when facility_kwh > 0 then energy_cost_cents end)
                then sum(energy_cost_cents)
        end as energy_cost_cents,
        sum(occupied_gpu_seconds) as occupied_gpu_seconds,
        sum(power_observed_gpu_seconds) as power_observed_gpu_seconds,
        sum(counter_observed_gpu_seconds) as counter_observed_gpu_seconds,
        sum(case when is_cloud then gpu_kwh end) as cloud_gpu_kwh
    from job_months
    group by batch_id, phase
)

select
    phases.batch_id,
    phases.phase,
    batches.contract_version,
    cast(phases.gpu_kwh as decimal(18, 4)) as gpu_kwh,
    cast(phases.idle_gpu_kwh as decimal(18, 4)) as idle_gpu_kwh,
    cast(phases.cloud_gpu_kwh as decimal(18, 4)) as cloud_gpu_kwh,
    cast(phases.facility_kwh as decimal(18, 4)) as facility_kwh,
    cast(phases.carbon_kg_co2e as decimal(18, 4)) as carbon_kg_co2e,
    cast(phases.energy_cost_cents / 100.0 as decimal(18, 2)) as energy_cost,
    cast(phases.power_observed_gpu_seconds / 3600.0 as decimal(18, 4)) as power_observed_gpu_hours,
    cast(phases.counter_observed_gpu_seconds / 3600.0 as decimal(18, 4)) as counter_observed_gpu_hours,
    cast(phase_unobserved.unobserved_gpu_seconds / 3600.0 as decimal(18, 4)) as unobserved_gpu_hours,
    case
        when phases.gpu_kwh is null then 'unobserved'
        when phase_unobserved.unobserved_gpu_seconds > 0 then 'partly_observed'
        else 'measured'
    end as energy_evidence,
    {{ energy_method('phases.counter_observed_gpu_seconds', 'phases.power_observed_gpu_seconds') }} as energy_method,
    {{ reporting_currency() }} as currency
from phases
inner join phase_unobserved
    on phases.batch_id = phase_unobserved.batch_id
    and (phases.phase = phase_unobserved.phase or (phases.phase is null and phase_unobserved.phase is null))
left join batches on phases.batch_id = batches.batch_id
