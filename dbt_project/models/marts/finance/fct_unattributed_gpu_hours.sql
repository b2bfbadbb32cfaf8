-- GPU time no job claims (R5), as a figure: the device samples that int_device_samples_attributed could give to no
-- job, in GPU-hours per month, utilization tier and reason: int_unattributed_gpu_days' days, summed by month. Never
-- dropped silently: this is GPU time the batch costs do not carry. Without a job there is no batch and no contract
-- version of its own, so the newest version's tier rule applies. Each sample stands for the time to the same GPU's
-- next unattributed sample, capped at max_gap_factor x the nominal interval (a day's last sample: to the GPU's first
-- of its next day with one); a sample delivered twice counts once. A MIG instance's sample counts its share of the
-- GPU (its slices over the GPU's total, docs/fractional_gpus.md). A GPU is its cluster, host and index.
{%- set gpu = ['cluster', 'hostname', 'gpu_index', 'gpu_instance_id'] %}

with parameters as (
    {{ contract_parameters({
        'sample_interval_seconds': 'interval_seconds',
        'max_gap_factor': 'max_gap_factor'}) }}
),

days as (
    select * from {{ ref('int_unattributed_gpu_days') }}
),

-- Each GPU-day's last sample stands for the time to the GPU's first unattributed sample of its next day.
gpu_days as (
    {{ close_sample_days('days', gpu) }}
)

select
    cast({{ dbt.date_trunc('month', 'days.sample_day') }} as date) as sample_month,
    days.tier,
    days.reason,
    days.contract_version,
    cast(sum(days.samples) as {{ dbt.type_bigint() }}) as samples,
    cast(sum(days.gpu_seconds + days.last_sample_share * gpu_days.last_instant_seconds) as double) / 3600
        as gpu_hours
from days
inner join gpu_days
    on days.sample_day = gpu_days.sample_day
    and days.cluster is not distinct from gpu_days.cluster
    and days.hostname = gpu_days.hostname
    and days.gpu_index = gpu_days.gpu_index
    and (
        days.gpu_instance_id = gpu_days.gpu_instance_id
        or (days.gpu_instance_id is null and gpu_days.gpu_instance_id is null)
    )
group by {{ dbt.date_trunc('month', 'days.sample_day') }}, days.tier, days.reason, days.contract_version
