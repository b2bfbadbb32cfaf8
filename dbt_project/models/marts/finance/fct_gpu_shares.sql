-- Fractional GPUs (docs/fractional_gpus.md): each physical GPU's observed time per month, split among what held it
-- and priced as that share of the GPU: int_gpu_share_days' days, summed by month. Each day's last instant of a GPU
-- stands for the time to the GPU's first instant of its next day with samples, capped at max_gap_factor x the
-- nominal interval (the tier rule's timing), or for the nominal interval when none follows.
-- The GPU-month's cost is its observed GPU-hours x the month's price per available GPU-hour, rounded once to the
-- cent, and its rows share it by GPU-seconds (largest remainder): they add up to it exactly. The job costs
-- (int_jobs_costed) still come from the scheduler's allocation; this mart states the share each job held.
-- No batch: the newest contract version's parameters apply. A GPU is its cluster (null: the samples name none),
-- host and index: gpu-01 of two clusters is two GPUs, each priced on its own.
{%- set share_keys = [
    'sample_month', 'cluster', 'hostname', 'gpu_index', 'gpu_instance_id', 'gpu_instance_profile', 'instance_slices',
    'total_slices', 'job_key', 'attribution', 'share_rule', 'contract_version'] %}

with parameters as (
    {{ contract_parameters({
        'sample_interval_seconds': 'interval_seconds',
        'max_gap_factor': 'max_gap_factor'}) }}
),

prices as (
    select month_start, price_per_available_gpu_hour from {{ ref('int_gpu_hour_prices_derived') }}
),

days as (
    select * from {{ ref('int_gpu_share_days') }}
),

-- Each GPU-day's last instant stands for the time to the GPU's next instant: its first on its next day.
gpu_days as (
    {{ close_sample_days('days', ['cluster', 'hostname', 'gpu_index'], ['gpu_day_seconds']) }}
),

closed as (
    select
        cast({{ dbt.date_trunc('month', 'days.sample_day') }} as date) as sample_month,
        days.cluster,
        days.hostname,
        days.gpu_index,
        days.gpu_instance_id,
        days.gpu_instance_profile,
        days.instance_slices,
        days.total_slices,
        days.job_key,
        days.attribution,
        days.share_rule,
        days.contract_version,
        days.observed_seconds + days.last_instant_holders * gpu_days.last_instant_seconds as observed_seconds,
        days.gpu_seconds + days.last_instant_share * gpu_days.last_instant_seconds as gpu_seconds
    from days
    inner join gpu_days
        on {{ same_gpu_day('days', 'gpu_days') }}
),

monthly as (
    select
        {{ share_keys | join(',\n        ') }},
        sum(observed_seconds) as observed_seconds,
        sum(gpu_seconds) as gpu_seconds
    from closed
    group by {{ share_keys | join(', ') }}
),

gpu_months as (
    select
        cast({{ dbt.date_trunc('month', 'sample_day') }} as date) as sample_month,
        cluster,
        hostname,
        gpu_index,
        sum(gpu_day_seconds + last_instant_seconds) as gpu_month_seconds
    from gpu_days
    group by {{ dbt.date_trunc('month', 'sample_day') }}, cluster, hostname, gpu_index
),

-- A GPU-month's cost in whole cents: seconds x price per hour / 3600 x 100.
parts as (
    select
        monthly.*,
        gpu_months.gpu_month_seconds,
        cast(round(gpu_months.gpu_month_seconds * prices.price_per_available_gpu_hour / 36, 0) as bigint)
            as gpu_month_cents
    from monthly
    inner join gpu_months
        on monthly.sample_month = gpu_months.sample_month
        and monthly.cluster is not distinct from gpu_months.cluster
        and monthly.hostname = gpu_months.hostname
        and monthly.gpu_index = gpu_months.gpu_index
    left join prices on monthly.sample_month = prices.month_start
),

allocated as (
    {{ largest_remainder_cents(
        'parts', ['sample_month', 'cluster', 'hostname', 'gpu_index'], 'gpu_month_cents', 'gpu_seconds',
        'gpu_instance_id, job_key, attribution, share_rule, instance_slices') }}
)

select
    sample_month,
    cluster,
    hostname,
    gpu_index,
    gpu_instance_id,
    gpu_instance_profile,
    instance_slices,
    total_slices,
    job_key,
    attribution,
    share_rule,
    cast(observed_seconds as double) / 3600 as observed_hours,
    gpu_seconds / observed_seconds as gpu_share,
    gpu_seconds / 3600 as gpu_hours,
    cast(allocated_cents / 100.0 as decimal(18, 2)) as gpu_cost,
    cast(gpu_month_seconds as double) / 3600 as gpu_month_hours,
    cast(gpu_month_cents / 100.0 as decimal(18, 2)) as gpu_month_cost,
    contract_version,
    {{ reporting_currency() }} as currency
from allocated
