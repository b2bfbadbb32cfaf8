-- GPU time no job claims (R5), as a figure: the device samples that int_device_samples_attributed could give to no
-- job, in GPU-hours per month, utilization tier and reason. Never dropped silently: this is GPU time the batch
-- costs do not carry. Without a job there is no batch and no contract version of its own, so the newest version's
-- tier rule applies. Each sample stands for the time to the same GPU's next unattributed sample, capped at
-- max_gap_factor x the nominal interval; a sample delivered twice counts once. A MIG instance's sample counts its
-- share of the GPU (its slices over the GPU's total, docs/fractional_gpus.md).
with samples as (
    select * from {{ ref('int_device_samples_attributed') }}
    where attributed_job_key is null
),

{{ tier_rule_ctes() }}

slice_totals as (
    {{ mig_slice_totals() }}
),

sequenced as (
    select
        samples.sampled_at,
        samples.attribution,
        {{ gpu_share('samples.gpu_instance_profile') }} as gpu_share,
        samples.gr_engine_active,
        samples.tensor_active,
        samples.nvlink_tx_bytes_per_second + samples.nvlink_rx_bytes_per_second as nvlink_bytes_per_second,
        parameters.comm_min_nvlink,
        parameters.comm_max_tensor,
        parameters.effective_min_gr,
        parameters.interval_seconds,
        parameters.max_gap_factor,
        tier_precedence.contract_version,
        tier_precedence.comm_wait_precedence,
        tier_precedence.effective_compute_precedence,
        tier_precedence.idle_precedence,
        lead(samples.sampled_at) over (
            partition by samples.hostname, samples.gpu_index, samples.gpu_instance_id
            order by samples.sampled_at, samples.source_file, samples.source_line
        ) as next_sampled_at
    from samples
    inner join parameters on parameters.contract_version = {{ latest_contract_version() }}
    inner join tier_precedence on parameters.contract_version = tier_precedence.contract_version
    {{ join_slice_totals('parameters.contract_version', 'samples.gpu_instance_profile') }}
),

classified as (
    select
        cast({{ dbt.date_trunc('month', 'sampled_at') }} as date) as sample_month,
        attribution,
        contract_version,
        gpu_share,
        least(
            coalesce({{ seconds_between('sampled_at', 'next_sampled_at') }}, interval_seconds),
            interval_seconds * max_gap_factor
        ) as represented_seconds,
        {{ sample_tier_precedence() }} as tier_precedence
    from sequenced
    where next_sampled_at is null or next_sampled_at > sampled_at
)

select
    classified.sample_month,
    tiers.tier,
    classified.attribution as reason,
    classified.contract_version,
    count(*) as samples,
    cast(sum(classified.represented_seconds * classified.gpu_share) as double) / 3600 as gpu_hours
from classified
inner join tiers
    on classified.contract_version = tiers.contract_version
    and classified.tier_precedence = tiers.precedence
group by classified.sample_month, tiers.tier, classified.attribution, classified.contract_version
