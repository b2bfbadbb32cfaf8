-- Measured GPU energy (docs/energy.md), per job, calendar month of the sample, utilization tier and method. A
-- device sample whose GPU reports its energy counter here and at its next sample has the counter's energy for the
-- time it stands for (counter_energy_mj, int_device_samples_tiered): method counter, mJ / 3.6e9 kWh. Else one that
-- reports its power draw stands for its represented seconds at that draw: method power, watts x seconds / 3.6e6
-- kWh. A sample with neither adds nothing here: its time is the job's unobserved energy time, never priced at a
-- nameplate wattage. A MIG instance's samples carry its GPU's power and counter: the instance takes its gpu_share of
-- that energy (its compute slices' share, docs/fractional_gpus.md), as it does of the GPU-seconds.
with samples as (
    select
        job_key,
        cast({{ dbt.date_trunc('month', 'sampled_at') }} as date) as month_start,
        tier,
        case when counter_energy_mj is not null then 'counter' else 'power' end as energy_method,
        represented_seconds,
        represented_gpu_seconds,
        gpu_share,
        power_watts,
        counter_energy_mj
    from {{ ref('int_device_samples_tiered') }}
    where counter_energy_mj is not null or power_watts is not null
)

select
    job_key,
    month_start,
    tier,
    energy_method,
    count(*) as measured_samples,
    sum(represented_gpu_seconds) as observed_gpu_seconds,
    case
        when energy_method = 'counter' then sum(counter_energy_mj * gpu_share) / 3600000000.0
        else sum(power_watts * represented_gpu_seconds) / 3600000.0
    end as gpu_kwh
from samples
group by job_key, month_start, tier, energy_method
