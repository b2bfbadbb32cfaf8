-- GPU time no job claims (R5), as a figure: the device samples that int_device_samples_attributed could give to no
-- job, in GPU-hours per month, utilization tier and reason: int_unattributed_gpu_days' days, summed by month. Never
-- dropped silently: this is GPU time the batch costs do not carry. Without a job there is no batch and no contract
-- version of its own, so the newest version's tier rule applies. Each sample stands for the time to the same GPU's
-- next unattributed sample, capped at max_gap_factor x the nominal interval (a day's last sample: to the GPU's first
-- of its next day with one); a sample delivered twice counts once. A MIG instance's sample counts its share of the
-- GPU (its slices over the GPU's total, docs/fractional_gpus.md). A GPU is its cluster, host and index.
with {{ unattributed_days_closed() }}

select
    cast({{ dbt.date_trunc('month', 'sample_day') }} as date) as sample_month,
    tier,
    reason,
    contract_version,
    cast(sum(samples) as {{ dbt.type_bigint() }}) as samples,
    cast(sum(gpu_seconds_closed) as double) / 3600 as gpu_hours
from closed_days
group by {{ dbt.date_trunc('month', 'sample_day') }}, tier, reason, contract_version
