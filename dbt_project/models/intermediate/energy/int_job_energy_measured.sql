-- Measured GPU energy (docs/energy.md): a device sample that reports its power draw stands for its represented
-- seconds at that draw, so its energy is watts x seconds / 3.6e6 kWh. Summed per job, calendar month of the sample
-- and utilization tier. A sample without a power draw adds nothing here: its time is the job's unobserved energy
-- time, never priced at a nameplate wattage.
with samples as (
    select
        job_key,
        cast({{ dbt.date_trunc('month', 'sampled_at') }} as date) as month_start,
        tier,
        represented_seconds,
        power_watts
    from {{ ref('int_device_samples_tiered') }}
    where power_watts is not null
)

select
    job_key,
    month_start,
    tier,
    count(*) as power_samples,
    sum(represented_seconds) as power_observed_gpu_seconds,
    sum(power_watts * represented_seconds) / 3600000.0 as gpu_kwh
from samples
group by job_key, month_start, tier
