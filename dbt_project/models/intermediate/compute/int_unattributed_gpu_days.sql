-- GPU time no job claims (R5), per day: the device samples int_device_samples_attributed could give to no job, in
-- GPU-seconds per day, GPU or MIG instance, utilization tier and reason, and for host_has_unallocated_gpus the one job
-- that held the host then (host_job_key: the warn test jobs_allocated_no_gpu_beside_gpu_work reads it), for
-- label_names_no_running_job the label (unclaimed_label: the warn test sacct_times_off_their_samples reads it), with
-- each row's first and last sample.
-- fct_unattributed_gpu_hours sums the days into months. Without a job there is no batch and no contract version of its
-- own, so the newest version's tier rule applies. Each sample stands for the time to the same GPU's (or instance's)
-- next unattributed sample, capped at max_gap_factor x the nominal interval; a sample delivered twice counts once. A
-- MIG instance's sample counts its share of the GPU (its slices over the GPU's total, docs/fractional_gpus.md). A GPU
-- is its cluster, host and index;
-- a copy naming no cluster is of the one cluster the same GPU's (or instance's) other unattributed copies name that
-- day, else of the one cluster a holder's copies of its instant name beside none (macros/gpu_clusters.sql, as
-- int_gpu_share_days resolves a copy no job claims), so a file delivered again with the cluster column added is one
-- GPU, counted once, not its cluster's and an unnamed one: also when another cluster's gpu-01 reports that day.
-- A copy naming none of a sample a job claims in a copy naming its cluster (the host held by jobs of two clusters at
-- once, so the copy naming none is neither's) is that job's sample, not GPU time no job claims, when it has that
-- sample's readings; a copy naming none whose readings differ from every named copy of its sample is another GPU, of
-- no cluster, counted on its own (copy_verdicts); and the cluster the GPU's other copies name that day is its only
-- when some of the GPU's copies naming none are those copies delivered again (delivered_again_gpus).
-- The day's last sample of a GPU stands for time that runs into a later day, so the day leaves it open: a row
-- states the seconds of its other samples (gpu_seconds), and whether it holds the last one (last_sample) with its
-- share of the GPU (last_sample_share); fct_unattributed_gpu_hours closes it with the GPU's first unattributed
-- sample of its next day. So a day's rows depend on that day's samples only.
-- Incremental by day, as int_gpu_share_days (macros/sample_days.sql). On Spark a table, built whole.
{{ config(
    materialized='table' if target.type == 'spark' else 'incremental',
    incremental_strategy='append',
    on_schema_change='sync_all_columns',
    pre_hook="{{ sample_days_forget('int_unattributed_gpu_days') }}",
    post_hook="{{ remember_inputs(kept_inputs('int_unattributed_gpu_days'), 'int_device_samples_inputs',"
        ~ " device_samples_code(['int_unattributed_gpu_days'])) }}",
) }}
-- depends_on: {{ ref('int_device_samples_inputs') }}
{%- set days = sample_days_to_build('int_unattributed_gpu_days') %}

with unclaimed as (
    select * from {{ ref('int_device_samples_attributed') }}
    where
        attributed_job_key is null
        {%- if days is not none %}
        -- The days built again only.
        and {{ periods_where(days, 'sampled_at') }}
        {%- endif %}
),

-- The unclaimed copies naming no cluster (a few: none when every copy names its cluster), and what the copies naming a
-- cluster of the same sample say of them (macros/gpu_clusters.sql copy_verdicts, as int_gpu_share_days judges them):
-- with the readings of a copy a job claims naming its cluster, the copy is that job's sample (a host of the same name
-- in two clusters, held by a job of each, leaves a copy naming none to neither job: several_jobs_on_host), with
-- readings differing from every named copy's it is another GPU, of no known cluster.
unnamed_copies as (
    {{ unnamed_copies('unclaimed', unclaimed=true) }}
),

copy_verdicts as (
    {{ copy_verdicts(
        ref('int_device_samples_attributed'), 'unnamed_copies',
        periods_where(days, 'samples.sampled_at') if days is not none else none) }}
),

-- The unclaimed copies, but those of a sample a job claims: that sample is the job's time, not GPU time no job claims.
samples as (
    select
        unclaimed.*,
        coalesce(copy_verdicts.is_other_gpu, 0) as other_gpu
    from unclaimed
    {{ join_copy_verdicts('unclaimed') }}
    where copy_verdicts.is_claimed is null or copy_verdicts.is_claimed = 0
),

-- The GPUs some of whose unattributed copies that day name a cluster and some none, and the one cluster they name.
mixed_gpus as (
    {{ mixed_gpus('samples') }}
),

-- Those of them some of whose copies naming none are named copies delivered again (delivered_again_gpus): only
-- they take the one cluster their other copies name (gpu_clusters).
delivered_again_gpus as (
    {{ delivered_again_gpus() }}
),

gpu_clusters as (
    {{ gpu_clusters('samples', by_day=true, of_jobs=false) }}
),

-- Who holds a mixed GPU (or instance) at each instant of its unattributed copies: its job label (the copies' job_id,
-- as int_gpu_share_days' holder of a copy no job claims), under the cluster each copy names ('': none). Only the mixed
-- GPUs' copies: a few, and none when every copy names its cluster or none does.
held as (
    select distinct
        coalesce(samples.cluster, '') as cluster_key,
        samples.hostname,
        samples.gpu_index,
        mixed_gpus.instance_key,
        samples.sampled_at,
        samples.job_id as holder,
        samples.other_gpu
    from samples
    inner join mixed_gpus
        on samples.hostname = mixed_gpus.hostname
        and samples.gpu_index = mixed_gpus.gpu_index
        and coalesce(samples.gpu_instance_id, -1) = mixed_gpus.instance_key
),

-- The cluster the copies naming none are of at an instant, when the day names no one cluster for the GPU (gpu-01 of
-- two clusters, one of whose files was delivered again with the cluster column): the one named cluster of a holder
-- whose copies of that instant name it and none, as int_gpu_share_days resolves it (macros/gpu_clusters.sql).
unnamed_clusters as (
    {{ unnamed_clusters('held') }}
),

-- Each sample with the cluster of its GPU (gpu_cluster): its own, else the one its GPU's other copies that day name,
-- else the one its instant's copies name (unnamed_clusters); none for another GPU (resolved_cluster).
clustered as (
    select
        samples.*,
        {{ resolved_cluster(
            'samples', ['gpu_clusters.cluster', 'unnamed_clusters.cluster_key'], 'samples.other_gpu') }} as gpu_cluster
    from samples
    {{ join_gpu_clusters('samples', none, by_day=true) }}
    left join unnamed_clusters
        on samples.hostname = unnamed_clusters.hostname
        and samples.gpu_index = unnamed_clusters.gpu_index
        and coalesce(samples.gpu_instance_id, -1) = unnamed_clusters.instance_key
        and samples.sampled_at = unnamed_clusters.sampled_at
),

{{ tier_rule_ctes() }}

slice_totals as (
    {{ mig_slice_totals() }}
),

sequenced as (
    select
        samples.gpu_cluster as cluster,
        samples.hostname,
        samples.gpu_index,
        samples.gpu_instance_id,
        samples.sampled_at,
        cast({{ dbt.date_trunc('day', 'samples.sampled_at') }} as date) as sample_day,
        samples.attribution,
        samples.host_job_key,
        case when samples.attribution = 'label_names_no_running_job' then samples.job_id end as unclaimed_label,
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
        -- The next sample on the same day; none for the day's last, which fct_unattributed_gpu_hours closes.
        lead(samples.sampled_at) over (
            partition by
                samples.gpu_cluster, samples.hostname, samples.gpu_index, samples.gpu_instance_id,
                cast({{ dbt.date_trunc('day', 'samples.sampled_at') }} as date)
            order by samples.sampled_at, samples.source_file, samples.source_line
        ) as next_sampled_at
    from clustered as samples
    inner join parameters on parameters.contract_version = {{ latest_contract_version() }}
    inner join tier_precedence on parameters.contract_version = tier_precedence.contract_version
    {{ join_slice_totals('parameters.contract_version', 'samples.gpu_instance_profile') }}
),

classified as (
    select
        sample_day,
        cluster,
        hostname,
        gpu_index,
        gpu_instance_id,
        sampled_at,
        attribution,
        host_job_key,
        unclaimed_label,
        contract_version,
        gpu_share,
        case when next_sampled_at is null then 1 else 0 end as last_sample,
        -- least() skips a null: the day's last sample is 0 here by a case.
        case when next_sampled_at is not null then least(
            {{ seconds_between('sampled_at', 'next_sampled_at') }},
            interval_seconds * max_gap_factor
        ) else 0 end as represented_seconds,
        {{ sample_tier_precedence() }} as tier_precedence
    from sequenced
    -- A sample delivered twice (the same GPU of the same cluster at the same instant, from two files; gpu_cluster,
    -- so also a copy naming the cluster and one naming none) is one sample: the last copy. gpu-01 of another cluster
    -- is another GPU.
    where next_sampled_at is null or next_sampled_at > sampled_at
),

daily as (
    select
        classified.sample_day,
        classified.cluster,
        classified.hostname,
        classified.gpu_index,
        classified.gpu_instance_id,
        tiers.tier,
        classified.attribution as reason,
        classified.host_job_key,
        classified.unclaimed_label,
        classified.contract_version,
        count(*) as samples,
        min(classified.sampled_at) as row_first_sampled_at,
        max(classified.sampled_at) as row_last_sampled_at,
        sum(classified.represented_seconds * classified.gpu_share) as gpu_seconds,
        sum(classified.last_sample) as last_sample,
        sum(classified.last_sample * classified.gpu_share) as last_sample_share
    from classified
    inner join tiers
        on classified.contract_version = tiers.contract_version
        and classified.tier_precedence = tiers.precedence
    group by
        classified.sample_day, classified.cluster, classified.hostname, classified.gpu_index,
        classified.gpu_instance_id, tiers.tier, classified.attribution, classified.host_job_key,
        classified.unclaimed_label, classified.contract_version
),

-- Each GPU's (or instance's) first and last sample of the day, from its rows' (daily, a row per GPU-day, tier, reason
-- and label): classified, every sample, is read once (a CTE read twice is materialized whole).
gpu_days as (
    select
        sample_day,
        cluster,
        hostname,
        gpu_index,
        gpu_instance_id,
        min(row_first_sampled_at) as first_sampled_at,
        max(row_last_sampled_at) as last_sampled_at
    from daily
    group by sample_day, cluster, hostname, gpu_index, gpu_instance_id
)

select
    daily.*,
    gpu_days.first_sampled_at,
    gpu_days.last_sampled_at
from daily
inner join gpu_days
    on {{ same_gpu_day('daily', 'gpu_days', instance=true) }}
