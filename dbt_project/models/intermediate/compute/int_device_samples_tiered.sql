-- One row per device sample inside one of its job's segments (int_job_segments), classified into the contract's
-- utilization tiers (R5): the tier names and their precedence come from the contract (stg_contract__enumerations),
-- the thresholds from its parameters; a sample takes the tier of lowest precedence whose condition holds. Each sample
-- stands for the time to the same GPU's next sample, capped at max_gap_factor x the nominal interval and at its
-- segment's end: the job's end (occupied_until_at: for a job still running, when its export saw it running), or a
-- Kubernetes job's preemption (no time of a gap between its segments, which another job may hold).
-- Samples are the job's as int_device_samples_attributed says (by job label, or by host and time); a sample
-- delivered twice counts once: the same GPU (or instance) of the same job at the same instant, also when one copy
-- names its cluster and the other none (a file delivered again with the cluster column added). A copy that names no
-- cluster is of the cluster its job's copies of that GPU name, when they name one (gpu_cluster); gpu-01 of two
-- named clusters stays two GPUs, and a copy naming none beside two named ones is not known to be either's. Copies
-- are one sample only if they measured the same: a copy naming none whose readings differ from every named copy of
-- its sample is another GPU, of no cluster (macros/gpu_clusters.sql copy_verdicts), and the cluster its job's copies
-- name is its only when some of its job's copies naming none are those copies delivered again (delivered_again_gpus).
-- Where the GPU reports its energy counter (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ since the driver loaded) at
-- this sample and the next, the energy of the time the sample stands for is the counter's rise to the next sample
-- (docs/energy.md): a fall is a driver reload, after which the next reading is the energy since the reload; a gap
-- capped as above keeps the share of the rise its represented seconds are of the gap. A rise faster than a GPU can
-- draw (contract energy.max_gpu_power_watts) is not used: the sample's energy is then its power draw's.
-- A sample stands for the job's share of its GPU (gpu_share, docs/fractional_gpus.md): a MIG instance's profile's
-- compute slices over its GPU model's total, 1 for a whole GPU; and when several jobs' labels report the same GPU (or
-- the same instance) at the same instant (Slurm shards, CUDA MPS, Kubernetes time-slicing), that over their number
-- (holders: the contract's shared_gpu_rule, equal, as int_gpu_share_days splits it; a label no job claims is a holder
-- too, two labels of one job are one). The holders of a GPU of a named cluster include those whose copies name no
-- cluster at that instant when a holder's copies then name both it and none (one job's file delivered again with
-- the cluster column, the other's not). represented_gpu_seconds is represented_seconds x that share, the GPU-seconds
-- the job's tiers and energy count: the jobs sharing a GPU add up to its time and its energy, never to more.
-- Stored, not a view: three models read it (int_job_utilization_tiered sums it per job and per job after its last
-- step, int_job_energy_measured its energy per job, month and tier, the counter's else power draw x represented
-- time, int_job_savings_split per GPU), and as a view each would compute the window over every device sample again.
-- Incremental by job: a night builds again only the jobs int_device_samples_inputs names (rebuild), from the samples
-- of their windows only, and keeps every other job's rows (a job's samples all lie in its window, so the result is
-- a full build's; the other labels of its GPUs' instants are in the files of its window too). Selected without
-- int_device_samples_inputs, it builds every job. On Spark a table, built whole
-- (docs/spark.md).
{{ config(
    materialized='table' if target.type == 'spark' else 'incremental',
    incremental_strategy='append',
    on_schema_change='sync_all_columns',
    pre_hook=[
        '{{ device_samples_tiered_forget() }}',
        "{{ host_chunks_begin(device_samples_tiered_window('sampled_at')) }}",
    ],
    post_hook=[
        '{{ host_chunks_rest() }}',
        "{{ remember_inputs(device_samples_tiered_state(), 'int_device_samples_inputs',"
        ~ " device_samples_tiered_code()) }}",
    ],
) }}
-- depends_on: {{ ref('int_device_samples_inputs') }}
{%- set incremental = is_incremental() and inputs_fresh('int_device_samples_inputs') %}
{#- The samples of the jobs built: attributed, of this chunk's hosts (macros/host_chunks.sql); in an incremental
    build the rebuilt jobs', the window's bounds as constants, so that the scans skip the other days. -#}
{%- set job_samples -%}
    samples.attributed_job_key is not null
    and {{ host_chunk_filter('samples.reported_hostname') }}
    {%- if incremental %}
        and {{ device_samples_tiered_window('samples.sampled_at') }}
        and samples.attributed_job_key in (
            select item from {{ ref('int_device_samples_inputs') }} where kind = 'job' and rebuild
        )
    {%- endif %}
{%- endset %}
{%- set counter_rise -%}
    case
        when next_energy_counter_mj >= energy_counter_mj then next_energy_counter_mj - energy_counter_mj
        when next_energy_counter_mj < energy_counter_mj then next_energy_counter_mj
    end
{%- endset %}

-- A job's segments (int_job_segments) run from a start to occupied_until_at (its end, or, still running, until its
-- export saw it running; int_jobs_unioned), a Kubernetes job's each to its run's next preempt, requeue or end.
with jobs as (
    select jobs.job_key, segments.segment_from, segments.segment_until, jobs.contract_version
    from {{ ref('int_jobs_attributed') }} as jobs
    inner join {{ ref('int_job_segments') }} as segments on jobs.job_key = segments.job_key
),

{{ tier_rule_ctes() }}

slice_totals as (
    {{ mig_slice_totals() }}
),

samples as (
    select
        samples.attributed_job_key as job_key,
        samples.cluster,
        samples.hostname,
        samples.gpu_index,
        samples.gpu_instance_id,
        samples.gpu_instance_profile,
        samples.sampled_at,
        samples.gr_engine_active,
        samples.tensor_active,
        samples.nvlink_tx_bytes_per_second + samples.nvlink_rx_bytes_per_second as nvlink_bytes_per_second,
        samples.power_watts,
        samples.energy_counter_mj,
        samples.source_file,
        samples.source_line
    from {{ ref('int_device_samples_attributed') }} as samples
    where {{ job_samples }}
),

-- The GPUs some of whose samples name a cluster and some none, and the cluster of a job's copies of them
-- (macros/gpu_clusters.sql: the same resolution as int_gpu_share_days').
mixed_gpus as (
    {%- set window_where -%}
        {{ host_chunk_filter('reported_hostname') }}
        {%- if incremental %} and {{ device_samples_tiered_window('sampled_at') }}{% endif %}
    {%- endset %}
    {{ mixed_gpus(ref('stg_telemetry__device_samples'), window_where) }}
),

-- Every copy of those GPUs (any job's or none's): a few, read once for gpu_clusters and copy_verdicts.
mixed_copies as (
    select samples.*
    from {{ ref('int_device_samples_attributed') }} as samples
    inner join mixed_gpus
        on samples.hostname = mixed_gpus.hostname
        and samples.gpu_index = mixed_gpus.gpu_index
        and coalesce(samples.gpu_instance_id, -1) = mixed_gpus.instance_key
    where
        {{ host_chunk_filter('samples.reported_hostname') }}
        {%- if incremental %}
        and {{ device_samples_tiered_window('samples.sampled_at') }}
        {%- endif %}
),

-- What the copies naming a cluster say of those naming none of the same sample (macros/gpu_clusters.sql
-- copy_verdicts, as int_gpu_share_days judges them): a copy naming none whose readings differ from every named
-- copy's is another GPU (a host of the same name in another cluster, whose file names none), of no known cluster.
unnamed_copies as (
    {{ unnamed_copies('mixed_copies') }}
),

copy_verdicts as (
    {{ copy_verdicts('mixed_copies', 'unnamed_copies') }}
),

-- The cluster of a job's copies naming none of a GPU: the one its copies naming a cluster name, when some of them
-- were delivered again naming none (delivered_again_gpus).
delivered_again_gpus as (
    {{ delivered_again_gpus() }}
),

gpu_clusters as (
    {{ gpu_clusters('mixed_copies', job_samples) }}
),

-- The cluster of each sample's GPU (gpu_cluster): its own, else the one its job's copies of that GPU name, but none
-- for another GPU (resolved_cluster).
clustered as (
    select
        samples.*,
        {{ resolved_cluster('samples', ['gpu_clusters.cluster'], 'copy_verdicts.is_other_gpu') }} as gpu_cluster
    from samples
    {{ join_gpu_clusters('samples', 'samples.job_key') }}
    {{ join_copy_verdicts('samples') }}
),

-- The hours in which a GPU (or MIG instance) reported more than one job label under one cluster (or none): the only
-- ones whose instants can be shared. One group over the labelled samples' keys, a few rows per GPU and day, so nearly
-- free (no sort, no window); without a shared GPU it is empty and the count below reads nothing (a join with an
-- empty side). Every copy of such an hour is counted below, whatever cluster it names (its unnamed copies may be of
-- a named cluster's GPU).
shared_hours as (
    select distinct hostname, gpu_index, instance_key, sample_hour
    from (
        select
            hostname,
            gpu_index,
            coalesce(gpu_instance_id, -1) as instance_key,
            {{ dbt.date_trunc('hour', 'sampled_at') }} as sample_hour
        from {{ ref('stg_telemetry__device_samples') }}
        where
            job_id is not null
            and {{ host_chunk_filter('reported_hostname') }}
        {%- if incremental %}
            and {{ device_samples_tiered_window('sampled_at') }}
        {%- endif %}
        group by
            coalesce(cluster, ''), hostname, gpu_index, coalesce(gpu_instance_id, -1),
            {{ dbt.date_trunc('hour', 'sampled_at') }}
        having min(job_id) < max(job_id)
    ) as shared_cluster_hours
),

-- Who holds the GPU (or instance) at each instant of those hours, under the cluster each copy names ('': none): each
-- job once (its attributed job, else its label), a copy delivered again once.
held as (
    select
        coalesce(samples.cluster, '') as cluster_key,
        samples.hostname,
        samples.gpu_index,
        coalesce(samples.gpu_instance_id, -1) as instance_key,
        samples.sampled_at,
        coalesce(samples.attributed_job_key, samples.job_id) as holder,
        coalesce(copy_verdicts.is_other_gpu, 0) as other_gpu
    from {{ ref('int_device_samples_attributed') }} as samples
    inner join shared_hours
        on samples.hostname = shared_hours.hostname
        and samples.gpu_index = shared_hours.gpu_index
        and coalesce(samples.gpu_instance_id, -1) = shared_hours.instance_key
        and {{ dbt.date_trunc('hour', 'samples.sampled_at') }} = shared_hours.sample_hour
    {{ join_copy_verdicts('samples') }}
    where
        samples.job_id is not null
        and {{ host_chunk_filter('samples.reported_hostname') }}
    {%- if incremental %}
        and {{ device_samples_tiered_window('samples.sampled_at') }}
    {%- endif %}
    group by
        coalesce(samples.cluster, ''), samples.hostname, samples.gpu_index, coalesce(samples.gpu_instance_id, -1),
        samples.sampled_at, coalesce(samples.attributed_job_key, samples.job_id),
        coalesce(copy_verdicts.is_other_gpu, 0)
),

-- The cluster the copies naming none are of at an instant (macros/gpu_clusters.sql): the one named cluster of a
-- holder whose copies of that instant name it and none.
unnamed_clusters as (
    {{ unnamed_clusters('held') }}
),

-- Each holder under the cluster of the GPU it holds (gpu_key): its copy's, else (naming none) unnamed_clusters', but
-- none for another GPU (copy_verdicts).
held_gpus as (
    select
        held.*,
        case
            when held.cluster_key = '' and held.other_gpu = 0 then coalesce(unnamed_clusters.cluster_key, '')
            else held.cluster_key
        end as gpu_key
    from held
    left join unnamed_clusters
        on held.hostname = unnamed_clusters.hostname
        and held.gpu_index = unnamed_clusters.gpu_index
        and held.instance_key = unnamed_clusters.instance_key
        and held.sampled_at = unnamed_clusters.sampled_at
),

-- The shared instants: how many hold the GPU (or instance) then, by the cluster of the GPU, for each cluster a copy
-- names (the kept copy of a sample joins by its own: named or not, the same GPU's count).
holders as (
    select
        copies.cluster_key,
        copies.hostname,
        copies.gpu_index,
        copies.instance_key,
        copies.sampled_at,
        gpus.holders
    from (
        select distinct cluster_key, gpu_key, hostname, gpu_index, instance_key, sampled_at from held_gpus
    ) as copies
    inner join (
        select gpu_key, hostname, gpu_index, instance_key, sampled_at, count(distinct holder) as holders
        from held_gpus
        group by gpu_key, hostname, gpu_index, instance_key, sampled_at
        having count(distinct holder) > 1
    ) as gpus
        on copies.gpu_key = gpus.gpu_key
        and copies.hostname = gpus.hostname
        and copies.gpu_index = gpus.gpu_index
        and copies.instance_key = gpus.instance_key
        and copies.sampled_at = gpus.sampled_at
),

sequenced as (
    -- Only the samples' own columns pass through the window, which holds every sample it orders (and spills under
    -- the memory limit); the contract's parameters join after it. At 100 M samples: 156 s -> 103 s.
    select
        samples.*,
        jobs.segment_until,
        jobs.contract_version,
        -- The file and line break a tie between two copies of one instant, so the same copy (the newest file's) is
        -- last, and kept, in every run.
        lead(samples.sampled_at) over (
            partition by
                samples.job_key, samples.gpu_cluster, samples.hostname, samples.gpu_index, samples.gpu_instance_id
            order by samples.sampled_at, samples.source_file, samples.source_line
        ) as next_sampled_at,
        lead(samples.energy_counter_mj) over (
            partition by
                samples.job_key, samples.gpu_cluster, samples.hostname, samples.gpu_index, samples.gpu_instance_id
            order by samples.sampled_at, samples.source_file, samples.source_line
        ) as next_energy_counter_mj
    from clustered as samples
    inner join jobs on samples.job_key = jobs.job_key
    where samples.sampled_at >= jobs.segment_from and samples.sampled_at < jobs.segment_until
),

classified as (
    select
        sequenced.job_key,
        sequenced.gpu_cluster as cluster,
        sequenced.hostname,
        sequenced.gpu_index,
        sequenced.gpu_instance_id,
        {{ gpu_share('sequenced.gpu_instance_profile') }} / coalesce(holders.holders, 1) as gpu_share,
        sequenced.sampled_at,
        sequenced.contract_version,
        sequenced.power_watts,
        {{ seconds_between('sequenced.sampled_at', 'sequenced.next_sampled_at') }} as seconds_to_next,
        -- The counter's rise to the next sample; after a driver reload (the counter fell) the next reading itself.
        -- A rise faster than one GPU can draw (the contract's energy.max_gpu_power_watts over the seconds between
        -- the two readings: a counter in another unit, or a reading of another GPU) is no energy of this GPU: not
        -- used, so the sample falls back to its power draw (itself bounded at ingest), else it is unobserved.
        case
            when parameters.max_gpu_watts is null
                or {{ counter_rise }} <= parameters.max_gpu_watts * 1000
                * {{ seconds_between('sequenced.sampled_at', 'sequenced.next_sampled_at') }}
                then {{ counter_rise }}
        end as counter_rise_mj,
        least(
            coalesce({{ seconds_between('sequenced.sampled_at', 'sequenced.next_sampled_at') }}, interval_seconds),
            interval_seconds * max_gap_factor,
            {{ seconds_between('sequenced.sampled_at', 'sequenced.segment_until') }}
        ) as represented_seconds,
        -- The tier rule, with the thresholds of the batch's contract version.
        {{ sample_tier_precedence() }} as tier_precedence
    from sequenced
    inner join parameters on sequenced.contract_version = parameters.contract_version
    inner join tier_precedence on sequenced.contract_version = tier_precedence.contract_version
    {{ join_slice_totals('sequenced.contract_version', 'sequenced.gpu_instance_profile') }}
    -- By the cluster the kept copy names (or none): holders gives each the count of the GPU it is of.
    left join holders
        on coalesce(sequenced.cluster, '') = holders.cluster_key
        and sequenced.hostname = holders.hostname
        and sequenced.gpu_index = holders.gpu_index
        and coalesce(sequenced.gpu_instance_id, -1) = holders.instance_key
        and sequenced.sampled_at = holders.sampled_at
    -- A sample delivered twice (the same GPU of the same cluster at the same instant, from two files; gpu_cluster, so
    -- also a copy that names the cluster and one that names none) is one sample: the last copy (newest file, last
    -- line) stands for the time; the others would stand for none.
    where sequenced.next_sampled_at is null or sequenced.next_sampled_at > sequenced.sampled_at
)

select
    classified.job_key,
    classified.cluster,
    classified.hostname,
    classified.gpu_index,
    classified.gpu_instance_id,
    classified.gpu_share,
    classified.sampled_at,
    classified.represented_seconds,
    classified.represented_seconds * classified.gpu_share as represented_gpu_seconds,
    tiers.tier,
    classified.power_watts,
    -- A capped gap keeps the share of the counter's rise that its represented seconds are of the gap.
    case
        when classified.represented_seconds < classified.seconds_to_next
            then cast(classified.counter_rise_mj as {{ dbt.type_float() }})
            * classified.represented_seconds / classified.seconds_to_next
        else classified.counter_rise_mj
    end as counter_energy_mj
from classified
inner join tiers
    on classified.contract_version = tiers.contract_version
    and classified.tier_precedence = tiers.precedence
