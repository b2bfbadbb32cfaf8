-- Each physical GPU's observed time per day, split among what held it (docs/fractional_gpus.md): fct_gpu_shares sums
-- these days into months and prices them. A GPU stands for the time from each instant it reports to its next one,
-- capped at max_gap_factor x the nominal interval. At an instant:
-- - a MIG instance (gpu_instance_profile 3g.40gb: 3 compute slices) holds its slices over the contract's
--   mig_total_slices (or its profile's mig_total_slices.<profile>: A30's 2g.12gb of 4); the slices no instance
--   reports are one unallocated_slices row;
-- - the whole GPU (no instance) holds the slices no instance holds: all of them on a GPU without MIG;
-- - several jobs on one GPU or one instance (several hpc_job/pod labels) split it by the contract's
--   shared_gpu_rule (equal); a sample no job claims keeps its int_device_samples_attributed reason.
-- The time a GPU's last instant of a day stands for runs to its first instant of a later day, so a day leaves it
-- open: a row states its seconds to the day's last instant (observed_seconds, gpu_seconds), and how many of its
-- holders were at that instant (last_instant_holders) with which share of the GPU (last_instant_share); the GPU's
-- first and last instant of the day close it in fct_gpu_shares. So a day's rows depend on that day's samples only.
-- No batch: the newest contract version's parameters apply. A sample delivered twice counts once. A GPU is its
-- cluster (null: the samples name none), host and index: gpu-01 of two clusters is two GPUs, never one crowded one;
-- a copy naming no cluster is of the cluster int_device_samples_tiered resolves for it, or one no job claims of the
-- cluster int_unattributed_gpu_days resolves for it (macros/gpu_clusters.sql), so a file delivered again (in whole or
-- in part) with the cluster column added is one GPU, not its cluster's and an unnamed one. A copy naming none of a
-- sample a job claims in a copy naming its cluster (the host held by jobs of two clusters at once, so the copy naming
-- none is neither's) is that job's sample, once, not also a holder of no cluster, when it has that sample's readings;
-- a copy naming none whose readings differ from every named copy of its sample is another GPU, of no cluster
-- (copy_verdicts), and a GPU's named cluster is its copies' naming none only when some of them are its named copies
-- delivered again (delivered_again_gpus).
-- Incremental by day: a night builds again only the days whose samples or jobs changed (sample_days_to_build), and
-- keeps the other days' rows. On Spark a table, built whole (docs/spark.md).
{{ config(
    materialized='table' if target.type == 'spark' else 'incremental',
    incremental_strategy='append',
    on_schema_change='sync_all_columns',
    pre_hook=[
        "{{ sample_days_forget('int_gpu_share_days') }}",
        "{{ host_chunks_begin(periods_filter(sample_days_to_build('int_gpu_share_days'), 'sampled_at')) }}",
    ],
    post_hook=[
        '{{ host_chunks_rest() }}',
        "{{ remember_inputs(kept_inputs('int_gpu_share_days'), 'int_device_samples_inputs',"
        ~ " device_samples_code(['int_gpu_share_days'])) }}",
    ],
) }}
-- depends_on: {{ ref('int_device_samples_inputs') }}
{%- set days = sample_days_to_build('int_gpu_share_days') %}
{%- set share_keys = [
    'sample_day', 'cluster', 'hostname', 'gpu_index', 'gpu_instance_id', 'gpu_instance_profile', 'instance_slices',
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

{#- The samples of the days built, of this chunk's hosts (macros/host_chunks.sql), on every read of the samples. -#}
{%- set day_samples -%}
    {{ host_chunk_filter('samples.reported_hostname') }}
    {%- if days is not none %}
        and {{ periods_where(days, 'samples.sampled_at') }}
    {%- endif %}
{%- endset %}

-- The GPU instants (one host's GPU index at one time, whatever cluster its samples name) with more than one sample:
-- a sample delivered again, a GPU shared by several jobs, several MIG instances of one GPU, or gpu-01 of two
-- clusters. Nearly every instant has one sample, which holds its GPU (or its instance) alone; only the crowded
-- instants' samples are grouped into holders below. (Grouping, numbering and joining every sample as a holder took
-- most of the model: at 442 M samples it was most of the night.)
crowded_instants as (
    select
        samples.hostname,
        samples.gpu_index,
        samples.sampled_at
    from {{ ref('int_device_samples_attributed') }} as samples
    where {{ day_samples }}
    group by samples.hostname, samples.gpu_index, samples.sampled_at
    having count(*) > 1
),

-- The copies at those instants.
crowded_raw as (
    select samples.*
    from {{ ref('int_device_samples_attributed') }} as samples
    inner join crowded_instants
        on samples.hostname = crowded_instants.hostname
        and samples.gpu_index = crowded_instants.gpu_index
        and samples.sampled_at = crowded_instants.sampled_at
    where {{ day_samples }}
),

-- What the crowded copies naming a cluster say of those naming none of the same sample (macros/gpu_clusters.sql
-- copy_verdicts, as int_unattributed_gpu_days and int_device_samples_tiered judge them): a copy naming none whose
-- readings differ from every named copy's is another GPU (a host of the same name in another cluster, whose file
-- names none), of no known cluster, counted on its own; one no job claims with the readings of a copy a job claims
-- naming its cluster (a host of the same name in two clusters, held by a job of each, leaves the copy naming none to
-- neither job: several_jobs_on_host) is that job's sample, left out. Copies of one sample are at one instant, so
-- crowded.
unnamed_copies as (
    {{ unnamed_copies('crowded_raw') }}
),

copy_verdicts as (
    {{ copy_verdicts('crowded_raw', 'unnamed_copies') }}
),

-- The GPUs of a job (or of none) that day some of whose copies naming none are its named copies delivered again.
delivered_again_gpus as (
    {{ delivered_again_gpus() }}
),

-- The cluster of a copy that names none (a file delivered again with the cluster column added), resolved as
-- int_device_samples_tiered and int_unattributed_gpu_days resolve it (macros/gpu_clusters.sql): the one cluster its
-- job's copies of that GPU name that day (gpu_clusters), or for a copy no job claims the one cluster the GPU's
-- unclaimed copies name that day (unclaimed_clusters), when some of those were delivered again naming none
-- (delivered_again_gpus), else, at a crowded instant, the one cluster of a holder whose copies of the instant name it
-- and none (unnamed_clusters); none for another GPU (copy_verdicts). Per day, so that a day's rows still depend on
-- that day's samples only.
mixed_gpus as (
    {{ mixed_gpus(ref('int_device_samples_attributed') ~ ' as samples', day_samples) }}
),

gpu_clusters as (
    {{ gpu_clusters(ref('int_device_samples_attributed'), day_samples, by_day=true) }}
),

unclaimed_clusters as (
    {{ gpu_clusters(ref('int_device_samples_attributed'), day_samples, by_day=true, of_jobs=false) }}
),

crowded_copies as (
    select
        samples.*,
        coalesce(gpu_clusters.cluster, unclaimed_clusters.cluster) as job_cluster
    from crowded_raw as samples
    {{ join_gpu_clusters('samples', 'samples.attributed_job_key', by_day=true) }}
    {{ join_gpu_clusters('samples', none, by_day=true, clusters='unclaimed_clusters') }}
),

-- Who holds the GPU (or instance) at a crowded instant (its attributed job, else its label), under the cluster each
-- copy names ('': none), and whether the copy is another GPU (other_gpu). Not a copy naming none of a sample a job
-- claims (is_claimed): that sample is its job's, once, not also a holder of no cluster; here and in crowded_samples.
held as (
    select distinct
        coalesce(copies.cluster, '') as cluster_key,
        copies.hostname,
        copies.gpu_index,
        coalesce(copies.gpu_instance_id, -1) as instance_key,
        copies.sampled_at,
        coalesce(copies.attributed_job_key, copies.job_id) as holder,
        coalesce(copy_verdicts.is_other_gpu, 0) as other_gpu
    from crowded_copies as copies
    {{ join_copy_verdicts('copies') }}
    where copy_verdicts.is_claimed is null or copy_verdicts.is_claimed = 0
),

unnamed_clusters as (
    {{ unnamed_clusters('held') }}
),

-- The crowded samples, each of the cluster of its GPU: its own, else its job's (or the unclaimed copies'), else its
-- instant's, but none for another GPU (resolved_cluster); not a copy naming none of a sample a job claims.
crowded_samples as (
    select
        {{ resolved_cluster(
            'copies', ['copies.job_cluster', 'unnamed_clusters.cluster_key'], 'copy_verdicts.is_other_gpu') }}
            as cluster,
        copies.hostname,
        copies.gpu_index,
        copies.gpu_instance_id,
        copies.gpu_instance_profile,
        copies.sampled_at,
        copies.attributed_job_key,
        copies.attribution,
        copies.job_id,
        copies.source_file,
        copies.source_line
    from crowded_copies as copies
    {{ join_copy_verdicts('copies') }}
    left join unnamed_clusters
        on copies.hostname = unnamed_clusters.hostname
        and copies.gpu_index = unnamed_clusters.gpu_index
        and coalesce(copies.gpu_instance_id, -1) = unnamed_clusters.instance_key
        and copies.sampled_at = unnamed_clusters.sampled_at
    where copy_verdicts.is_claimed is null or copy_verdicts.is_claimed = 0
),

-- The crowded samples delivered more than once (one sample: a GPU or instance, a job label and an instant), whose
-- newest copy has to be found. The keys compare a missing instance or label as -1 or '': a sample can only be
-- matched too widely here (then numbered for nothing), never too narrowly, so every copy of a sample delivered
-- again is numbered.
delivered_again as (
    select
        cluster,
        hostname,
        gpu_index,
        coalesce(gpu_instance_id, -1) as instance_key,
        coalesce(job_id, '') as label_key,
        sampled_at
    from crowded_samples
    group by cluster, hostname, gpu_index, coalesce(gpu_instance_id, -1), coalesce(job_id, ''), sampled_at
    having count(*) > 1
),

-- Each crowded sample once: as delivered, or its newest copy (the last file, then the last line).
delivered as (
    select
        {{ delivered_columns('samples') }}
    from crowded_samples as samples
    left join delivered_again
        on {{ delivered_again_matches('samples') }}
    where delivered_again.sampled_at is null

    union all

    select
        {{ delivered_columns('copies') }}
    from (
        select
            samples.*,
            row_number() over (
                partition by samples.cluster, samples.hostname, samples.gpu_index, samples.gpu_instance_id,
                    samples.job_id, samples.sampled_at
                order by samples.source_file desc, samples.source_line desc
            ) as copy_number
        from crowded_samples as samples
        inner join delivered_again
            on {{ delivered_again_matches('samples') }}
    ) as copies
    where copies.copy_number = 1
),

-- One row per GPU, instance and crowded instant (the whole GPU is the instance null): how many hold it, and the
-- slices of its profile.
unit_holders as (
    select
        cluster,
        hostname,
        gpu_index,
        gpu_instance_id,
        sampled_at,
        count(*) as holders_sharing,
        max(gpu_instance_profile) as gpu_instance_profile,
        max(instance_slices) as instance_slices
    from delivered
    group by cluster, hostname, gpu_index, gpu_instance_id, sampled_at
),

-- Each holder of a GPU or instance at a crowded instant, with how many share it.
crowded_holders as (
    select
        delivered.*,
        unit_holders.holders_sharing
    from delivered
    inner join unit_holders
        on delivered.hostname = unit_holders.hostname
        and delivered.cluster is not distinct from unit_holders.cluster
        and delivered.gpu_index = unit_holders.gpu_index
        and coalesce(delivered.gpu_instance_id, -1) = coalesce(unit_holders.gpu_instance_id, -1)
        and delivered.sampled_at = unit_holders.sampled_at
),

-- A crowded instant: the slices its MIG instances hold, and whether the whole GPU (no instance) is among its units.
crowded_totals as (
    select
        unit_holders.cluster,
        unit_holders.hostname,
        unit_holders.gpu_index,
        unit_holders.sampled_at,
        sum(coalesce(unit_holders.instance_slices, 0)) as held_slices,
        max(case when unit_holders.gpu_instance_profile is not null then {{ total_slices_of() }} end)
            as profile_total_slices,
        max(case when unit_holders.instance_slices is null then 1 else 0 end) as has_whole_gpu
    from unit_holders
    {{ join_slice_totals(latest_contract_version(), 'unit_holders.gpu_instance_profile') }}
    group by unit_holders.cluster, unit_holders.hostname, unit_holders.gpu_index, unit_holders.sampled_at
),

-- Every GPU instant: a sample alone at its instant, which is also its one holder, or a crowded instant, whose
-- holders join after the window.
instants as (
    select
        alone.cluster,
        alone.hostname,
        alone.gpu_index,
        alone.sampled_at,
        coalesce(alone.instance_slices, 0) as held_slices,
        case when alone.gpu_instance_profile is not null then {{ total_slices_of() }} end as profile_total_slices,
        case when alone.instance_slices is null then 1 else 0 end as has_whole_gpu,
        0 as is_crowded,
        alone.gpu_instance_id,
        alone.gpu_instance_profile,
        alone.instance_slices,
        alone.job_key,
        alone.attribution
    from (
        select
            {{ delivered_columns(
                'samples', 'coalesce(samples.cluster, gpu_clusters.cluster, unclaimed_clusters.cluster)'
            ) }}
        from {{ ref('int_device_samples_attributed') }} as samples
        left join crowded_instants
            on samples.hostname = crowded_instants.hostname
            and samples.gpu_index = crowded_instants.gpu_index
            and samples.sampled_at = crowded_instants.sampled_at
        {{- join_gpu_clusters('samples', 'samples.attributed_job_key', by_day=true) }}
        {{- join_gpu_clusters('samples', none, by_day=true, clusters='unclaimed_clusters') }}
        where crowded_instants.sampled_at is null and {{ day_samples }}
    ) as alone
    {{ join_slice_totals(latest_contract_version(), 'alone.gpu_instance_profile') }}

    union all

    select
        cluster,
        hostname,
        gpu_index,
        sampled_at,
        held_slices,
        profile_total_slices,
        has_whole_gpu,
        1 as is_crowded,
        cast(null as integer) as gpu_instance_id,
        cast(null as {{ dbt.type_string() }}) as gpu_instance_profile,
        cast(null as integer) as instance_slices,
        cast(null as {{ dbt.type_string() }}) as job_key,
        cast(null as {{ dbt.type_string() }}) as attribution
    from crowded_totals
),

-- The next instant of the same GPU on the same day; none for the day's last, which fct_gpu_shares closes.
sequenced as (
    select
        instants.*,
        cast({{ dbt.date_trunc('day', 'sampled_at') }} as date) as sample_day,
        lead(sampled_at) over (
            partition by cluster, hostname, gpu_index, cast({{ dbt.date_trunc('day', 'sampled_at') }} as date)
            order by sampled_at
        ) as next_sampled_at
    from instants
),

timed as (
    select
        sequenced.*,
        cast(coalesce(sequenced.profile_total_slices, parameters.total_slices) as integer) as total_slices,
        parameters.contract_version,
        case when sequenced.next_sampled_at is null then 1 else 0 end as is_last_instant,
        -- least() skips a null: the day's last instant is 0 here by a case.
        case when sequenced.next_sampled_at is not null then least(
            {{ seconds_between('sequenced.sampled_at', 'sequenced.next_sampled_at') }},
            parameters.interval_seconds * parameters.max_gap_factor
        ) else 0 end as represented_seconds
    from sequenced
    inner join parameters on parameters.contract_version = {{ latest_contract_version() }}
),

-- Each holder's share of the GPU at an instant: an instance holds its slices, the whole GPU the slices no instance
-- holds, split among the holders sharing it.
shares as (
    select
        timed.sample_day,
        timed.cluster,
        timed.hostname,
        timed.gpu_index,
        coalesce(holders.gpu_instance_id, timed.gpu_instance_id) as gpu_instance_id,
        coalesce(holders.gpu_instance_profile, timed.gpu_instance_profile) as gpu_instance_profile,
        coalesce(holders.instance_slices, timed.instance_slices) as instance_slices,
        coalesce(holders.job_key, timed.job_key) as job_key,
        coalesce(holders.attribution, timed.attribution) as attribution,
        case
            when holders.holders_sharing > 1 then share_rules.shared_rule
            when coalesce(holders.instance_slices, timed.instance_slices) is null then 'whole_gpu'
            else 'mig_slices'
        end as share_rule,
        timed.total_slices,
        timed.contract_version,
        timed.represented_seconds,
        timed.is_last_instant,
        cast(coalesce(
            holders.instance_slices, timed.instance_slices, greatest(timed.total_slices - timed.held_slices, 0)
        ) as double) / timed.total_slices / coalesce(holders.holders_sharing, 1) as gpu_share
    from timed
    -- A crowded instant's holders; a sample alone is its instant's one holder.
    left join crowded_holders as holders
        on timed.is_crowded = 1
        and timed.hostname = holders.hostname
        and timed.cluster is not distinct from holders.cluster
        and timed.gpu_index = holders.gpu_index
        and timed.sampled_at = holders.sampled_at
    inner join share_rules on timed.contract_version = share_rules.contract_version

    union all

    -- The slices no MIG instance held at an instant of a GPU in MIG mode.
    select
        sample_day,
        cluster,
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
        represented_seconds,
        is_last_instant,
        cast(total_slices - held_slices as double) / total_slices as gpu_share
    from timed
    where has_whole_gpu = 0 and held_slices < total_slices
),

gpu_days as (
    select
        sample_day,
        cluster,
        hostname,
        gpu_index,
        min(sampled_at) as first_sampled_at,
        max(sampled_at) as last_sampled_at,
        sum(represented_seconds) as gpu_day_seconds
    from timed
    group by sample_day, cluster, hostname, gpu_index
),

daily as (
    select
        {{ share_keys | join(',\n        ') }},
        sum(represented_seconds) as observed_seconds,
        sum(cast(represented_seconds as double) * gpu_share) as gpu_seconds,
        sum(is_last_instant) as last_instant_holders,
        sum(is_last_instant * gpu_share) as last_instant_share
    from shares
    group by {{ share_keys | join(', ') }}
)

select
    daily.*,
    gpu_days.first_sampled_at,
    gpu_days.last_sampled_at,
    gpu_days.gpu_day_seconds
from daily
inner join gpu_days
    on {{ same_gpu_day('daily', 'gpu_days') }}
