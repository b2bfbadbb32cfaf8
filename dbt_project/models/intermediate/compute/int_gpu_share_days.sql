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
-- No batch: the newest contract version's parameters apply. A sample delivered twice counts once.
-- Incremental by day: a night builds again only the days whose samples or jobs changed (sample_days_to_build), and
-- keeps the other days' rows. On Spark a table, built whole (docs/spark.md).
{{ config(
    materialized='table' if target.type == 'spark' else 'incremental',
    incremental_strategy='append',
    on_schema_change='sync_all_columns',
    pre_hook=[
        "{{ sample_days_forget('int_gpu_share_days') }}",
        "{{ host_chunks_begin(sample_days_filter(sample_days_to_build('int_gpu_share_days'), 'sampled_at')) }}",
    ],
    post_hook=[
        '{{ host_chunks_rest() }}',
        "{{ device_samples_remember(device_samples_state('int_gpu_share_days'),"
        ~ " device_samples_code(['int_gpu_share_days'])) }}",
    ],
) }}
-- depends_on: {{ ref('int_device_samples_inputs') }}
{%- set days = sample_days_to_build('int_gpu_share_days') %}
{%- set share_keys = [
    'sample_day', 'hostname', 'gpu_index', 'gpu_instance_id', 'gpu_instance_profile', 'instance_slices',
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

-- The samples delivered more than once (one sample: a GPU or instance, a job label and an instant), the only ones
-- whose newest copy has to be found. Numbering every sample's copies in a window cost a third of the model; now
-- only these are numbered. The keys compare a missing instance or label as -1 or '': a sample can only be matched
-- too widely here (then numbered for nothing), never too narrowly, so every copy of a sample delivered again is
-- numbered.
delivered_again as (
    select
        hostname,
        gpu_index,
        coalesce(gpu_instance_id, -1) as instance_key,
        coalesce(job_id, '') as label_key,
        sampled_at
    from {{ ref('int_device_samples_attributed') }}
    -- This chunk's hosts (macros/host_chunks.sql), on every read of the samples.
    where {{ host_chunk_filter('hostname') }}
    {%- if days is not none %}
        and {{ sample_days_where(days, 'sampled_at') }}
    {%- endif %}
    group by hostname, gpu_index, coalesce(gpu_instance_id, -1), coalesce(job_id, ''), sampled_at
    having count(*) > 1
),

-- Each sample once: as delivered, or its newest copy (the last file, then the last line). Each branch reads the
-- attributed samples itself, so a filter on the days built reaches both.
delivered as (
    select
        {{ delivered_columns('samples') }}
    from {{ ref('int_device_samples_attributed') }} as samples
    left join delivered_again
        on {{ delivered_again_matches('samples') }}
    where
        delivered_again.sampled_at is null
        and {{ host_chunk_filter('samples.hostname') }}
    {%- if days is not none %}
        and {{ sample_days_where(days, 'samples.sampled_at') }}
    {%- endif %}

    union all

    select
        {{ delivered_columns('copies') }}
    from (
        select
            samples.*,
            row_number() over (
                partition by samples.hostname, samples.gpu_index, samples.gpu_instance_id, samples.job_id,
                    samples.sampled_at
                order by samples.source_file desc, samples.source_line desc
            ) as copy_number
        from {{ ref('int_device_samples_attributed') }} as samples
        inner join delivered_again
            on {{ delivered_again_matches('samples') }}
        where {{ host_chunk_filter('samples.hostname') }}
        {%- if days is not none %}
            and {{ sample_days_where(days, 'samples.sampled_at') }}
        {%- endif %}
    ) as copies
    where copies.copy_number = 1
),

-- One row per GPU, instance and instant (the whole GPU is the instance null): how many hold it, and the slices of
-- its profile.
unit_holders as (
    select
        hostname,
        gpu_index,
        gpu_instance_id,
        sampled_at,
        count(*) as holders_sharing,
        max(gpu_instance_profile) as gpu_instance_profile,
        max(instance_slices) as instance_slices
    from delivered
    group by hostname, gpu_index, gpu_instance_id, sampled_at
),

-- Each holder of a GPU or instance at an instant, with how many share it: one, unless its unit is among the shared
-- ones (a join on those few, not a window over every sample).
holders as (
    select
        delivered.*,
        coalesce(shared.holders_sharing, 1) as holders_sharing
    from delivered
    left join (select * from unit_holders where holders_sharing > 1) as shared
        on delivered.hostname = shared.hostname
        and delivered.gpu_index = shared.gpu_index
        and coalesce(delivered.gpu_instance_id, -1) = coalesce(shared.gpu_instance_id, -1)
        and delivered.sampled_at = shared.sampled_at
),

-- The units with the total slices of the GPU model its profile names.
units as (
    select
        unit_holders.*,
        case when unit_holders.gpu_instance_profile is not null then {{ total_slices_of() }} end
            as profile_total_slices
    from unit_holders
    {{ join_slice_totals(latest_contract_version(), 'unit_holders.gpu_instance_profile') }}
),

instants as (
    select
        hostname,
        gpu_index,
        sampled_at,
        sum(coalesce(instance_slices, 0)) as held_slices,
        max(profile_total_slices) as profile_total_slices,
        max(case when instance_slices is null then 1 else 0 end) as has_whole_gpu
    from units
    group by hostname, gpu_index, sampled_at
),

-- The next instant of the same GPU on the same day; none for the day's last, which fct_gpu_shares closes.
sequenced as (
    select
        instants.*,
        cast({{ dbt.date_trunc('day', 'sampled_at') }} as date) as sample_day,
        lead(sampled_at) over (
            partition by hostname, gpu_index, cast({{ dbt.date_trunc('day', 'sampled_at') }} as date)
            order by sampled_at
        ) as next_sampled_at
    from instants
),

timed as (
    select
        sequenced.hostname,
        sequenced.gpu_index,
        sequenced.sampled_at,
        sequenced.sample_day,
        sequenced.held_slices,
        sequenced.has_whole_gpu,
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
        holders.sample_day,
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
        timed.represented_seconds,
        timed.is_last_instant,
        cast(coalesce(holders.instance_slices, greatest(timed.total_slices - timed.held_slices, 0)) as double)
        / timed.total_slices / holders.holders_sharing as gpu_share
    from holders
    inner join timed
        on holders.hostname = timed.hostname
        and holders.gpu_index = timed.gpu_index
        and holders.sampled_at = timed.sampled_at
    inner join share_rules on timed.contract_version = share_rules.contract_version

    union all

    -- The slices no MIG instance held at an instant of a GPU in MIG mode.
    select
        sample_day,
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
        hostname,
        gpu_index,
        min(sampled_at) as first_sampled_at,
        max(sampled_at) as last_sampled_at,
        sum(represented_seconds) as gpu_day_seconds
    from timed
    group by sample_day, hostname, gpu_index
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
    on daily.sample_day = gpu_days.sample_day
    and daily.hostname = gpu_days.hostname
    and daily.gpu_index = gpu_days.gpu_index
