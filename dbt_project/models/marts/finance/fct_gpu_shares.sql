-- Fractional GPUs (docs/fractional_gpus.md): each physical GPU's observed time per month, split among what held it
-- and priced as that share of the GPU. A GPU stands for the time from each instant it reports to its next one,
-- capped at max_gap_factor x the nominal interval (the tier rule's timing). At an instant:
-- - a MIG instance (gpu_instance_profile 3g.40gb: 3 compute slices) holds its slices over the contract's
--   mig_total_slices (or its profile's mig_total_slices.<profile>: A30's 2g.12gb of 4); the slices no instance
--   reports are one unallocated_slices row;
-- - the whole GPU (no instance) holds the slices no instance holds: all of them on a GPU without MIG;
-- - several jobs on one GPU or one instance (several hpc_job/pod labels) split it by the contract's
--   shared_gpu_rule (equal); a sample no job claims keeps its int_device_samples_attributed reason.
-- The GPU-month's cost is its observed GPU-hours x the month's price per available GPU-hour, rounded once to the
-- cent, and its rows share it by GPU-seconds (largest remainder): they add up to it exactly. The job costs
-- (int_jobs_costed) still come from the scheduler's allocation; this mart states the share each job held.
-- No batch: the newest contract version's parameters apply. A sample delivered twice counts once.
{%- set share_keys = [
    'sample_month', 'hostname', 'gpu_index', 'gpu_instance_id', 'gpu_instance_profile', 'instance_slices',
    'total_slices', 'job_key', 'attribution', 'share_rule', 'contract_version'] %}

with parameters as (
    {{ contract_parameters({
        'sample_interval_seconds': 'interval_seconds',
        'max_gap_factor': 'max_gap_factor',
        'mig_total_slices': 'total_slices'}) }}
),

slice_totals as (
    {{ mig_slice_totals() }}
),

share_rules as (
    select contract_version, code as shared_rule
    from {{ ref('stg_contract__enumerations') }}
    where enumeration = 'gpu_share_rule'
),

prices as (
    select month_start, price_per_available_gpu_hour from {{ ref('int_gpu_hour_prices_derived') }}
),

delivered as (
    select
        hostname,
        gpu_index,
        gpu_instance_id,
        gpu_instance_profile,
        sampled_at,
        attributed_job_key as job_key,
        attribution,
        cast({{ dbt.split_part('gpu_instance_profile', "'g.'", 1) }} as integer) as instance_slices,
        row_number() over (
            partition by hostname, gpu_index, gpu_instance_id, job_id, sampled_at
            order by source_file desc, source_line desc
        ) as copy_number
    from {{ ref('int_device_samples_attributed') }}
),

-- The window runs after the where: each holder of a GPU or instance at an instant is counted once.
holders as (
    select
        delivered.*,
        count(*) over (partition by hostname, gpu_index, gpu_instance_id, sampled_at) as holders_sharing
    from delivered
    where copy_number = 1
),

-- One row per GPU, instance and instant (the whole GPU is the instance null), with the slices of the GPU model its
-- profile names.
units as (
    select
        grouped.*,
        case when grouped.gpu_instance_profile is not null then {{ total_slices_of() }} end as profile_total_slices
    from (
        select
            hostname,
            gpu_index,
            gpu_instance_id,
            sampled_at,
            max(gpu_instance_profile) as gpu_instance_profile,
            max(instance_slices) as instance_slices
        from holders
        group by hostname, gpu_index, gpu_instance_id, sampled_at
    ) as grouped
    {{ join_slice_totals(latest_contract_version(), 'grouped.gpu_instance_profile') }}
),

instants as (
    select
        hostname,
        gpu_index,
        sampled_at,
        sum(coalesce(instance_slices, 0)) as held_slices,
        max(profile_total_slices) as profile_total_slices,
        max(case when instance_slices is null then 1 else 0 end) as has_whole_gpu,
        lead(sampled_at) over (partition by hostname, gpu_index order by sampled_at) as next_sampled_at
    from units
    group by hostname, gpu_index, sampled_at
),

timed as (
    select
        instants.hostname,
        instants.gpu_index,
        instants.sampled_at,
        cast({{ dbt.date_trunc('month', 'instants.sampled_at') }} as date) as sample_month,
        instants.held_slices,
        instants.has_whole_gpu,
        cast(coalesce(instants.profile_total_slices, parameters.total_slices) as integer) as total_slices,
        parameters.contract_version,
        least(
            coalesce({{ seconds_between('instants.sampled_at', 'instants.next_sampled_at') }},
                parameters.interval_seconds),
            parameters.interval_seconds * parameters.max_gap_factor
        ) as represented_seconds
    from instants
    inner join parameters on parameters.contract_version = {{ latest_contract_version() }}
),

shares as (
    select
        holders.hostname,
        holders.gpu_index,
        holders.gpu_instance_id,
        holders.gpu_instance_profile,
        holders.instance_slices,
        holders.job_key,
        holders.attribution,
        case
            when holders.holders_sharing > 1 then share_rules.shared_rule
            when holders.instance_slices is null then 'whole_gpu'
            else 'mig_slices'
        end as share_rule,
        timed.total_slices,
        timed.contract_version,
        timed.sample_month,
        timed.represented_seconds,
        cast(timed.represented_seconds as double)
        -- An instance holds its slices; the whole GPU the slices no instance holds.
        * coalesce(holders.instance_slices, greatest(timed.total_slices - timed.held_slices, 0))
        / timed.total_slices / holders.holders_sharing as gpu_seconds
    from holders
    inner join timed
        on holders.hostname = timed.hostname
        and holders.gpu_index = timed.gpu_index
        and holders.sampled_at = timed.sampled_at
    inner join share_rules on timed.contract_version = share_rules.contract_version

    union all

    -- The slices no MIG instance held at an instant of a GPU in MIG mode.
    select
        hostname,
        gpu_index,
        cast(null as integer) as gpu_instance_id,
        cast(null as {{ dbt.type_string() }}) as gpu_instance_profile,
        cast(total_slices - held_slices as integer) as instance_slices,
        cast(null as {{ dbt.type_string() }}) as job_key,
        'unallocated_slices' as attribution,
        'unallocated_slices' as share_rule,
        total_slices,
        contract_version,
        sample_month,
        represented_seconds,
        cast(represented_seconds as double) * (total_slices - held_slices) / total_slices as gpu_seconds
    from timed
    where has_whole_gpu = 0 and held_slices < total_slices
),

monthly as (
    select
        {{ share_keys | join(',\n        ') }},
        sum(represented_seconds) as observed_seconds,
        sum(gpu_seconds) as gpu_seconds
    from shares
    group by {{ share_keys | join(', ') }}
),

gpu_months as (
    select
        sample_month,
        hostname,
        gpu_index,
        sum(represented_seconds) as gpu_month_seconds
    from timed
    group by sample_month, hostname, gpu_index
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
        and monthly.hostname = gpu_months.hostname
        and monthly.gpu_index = gpu_months.gpu_index
    left join prices on monthly.sample_month = prices.month_start
),

allocated as (
    {{ largest_remainder_cents(
        'parts', ['sample_month', 'hostname', 'gpu_index'], 'gpu_month_cents', 'gpu_seconds',
        'gpu_instance_id, job_key, attribution, share_rule, instance_slices') }}
)

select
    sample_month,
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
