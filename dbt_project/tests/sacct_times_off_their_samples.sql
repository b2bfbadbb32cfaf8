-- A Slurm job whose own samples lie beside its times by a whole number of quarter hours, as a time zone moves them: a
-- sacct export read in another zone than the one it was written in (the scheduler source's time_zone, docs/inputs.md;
-- sacct prints local times without a zone). Its End - Start still equals Elapsed, so nothing at ingest can tell, but
-- the device samples labelled with its JobID then fall outside its window, as GPU time no job claims
-- (label_names_no_running_job): the job's utilization is measured on the wrong samples, or on none.
--
-- Read from int_unattributed_gpu_days (GPU-days, not samples): the samples left to no job whose label names the job,
-- their first and last instants. A job shifted later (by k) has its samples run past its end until end + k, and
-- begin at its end or at start + k, whichever is later; shifted earlier, they begin at start - k and end at its start
-- or at end - k, whichever is earlier. k must be within two sample intervals of a whole number of quarter hours
-- (time zones are), from 15 minutes to 14 hours, and the other end must match it within two intervals: an exporter
-- that keeps labelling a GPU a minute after its job ended is no time zone. Each such job is listed with the offset in
-- hours (positive: the samples are later than the sacct times). The night goes on (a warning); nothing is charged
-- otherwise than the records say. Set time_zone to the zone sacct ran in and the next night attributes them.
{{ config(
    severity='warn', store_failures=true, schema='audit',
    meta={'dagster': {'ref': {'name': 'int_unattributed_gpu_days'}}}
) }}

with parameters as (
    {{ contract_parameters({'sample_interval_seconds': 'interval_seconds'}) }}
),

tolerance as (
    select 2 * interval_seconds as seconds
    from parameters
    where contract_version = {{ latest_contract_version() }}
),

labelled as (
    select
        unclaimed_label as job_id,
        cluster,
        min(row_first_sampled_at) as first_sampled_at,
        max(row_last_sampled_at) as last_sampled_at,
        sum(samples) as samples
    from {{ ref('int_unattributed_gpu_days') }}
    where reason = 'label_names_no_running_job' and unclaimed_label is not null
    group by unclaimed_label, cluster
),

jobs as (
    select job_key, job_id, cluster, batch_id, start_at, end_at
    from {{ ref('int_jobs_attributed') }}
    where scheduler = 'slurm' and start_at is not null and end_at > start_at
),

-- The offset the samples suggest, in seconds: later, the last sample past the end; earlier, the first before the start.
offsets as (
    select
        jobs.*,
        labelled.first_sampled_at,
        labelled.last_sampled_at,
        labelled.samples,
        tolerance.seconds as tolerance_seconds,
        case
            when labelled.last_sampled_at > jobs.end_at
                then {{ seconds_between('jobs.end_at', 'labelled.last_sampled_at') }}
            when labelled.first_sampled_at < jobs.start_at
                then 0 - ({{ seconds_between('labelled.first_sampled_at', 'jobs.start_at') }})
        end as offset_seconds,
        {{ seconds_between('jobs.start_at', 'jobs.end_at') }} as span_seconds
    from labelled
    inner join jobs
        on labelled.job_id = jobs.job_id
        and (labelled.cluster = jobs.cluster or labelled.cluster is null or jobs.cluster is null)
    cross join tolerance
),

rounded as (
    select
        offsets.*,
        round(offset_seconds / 900.0) * 900 as zone_offset_seconds
    from offsets
    where offset_seconds is not null
)

select
    job_key,
    job_id,
    cluster,
    batch_id,
    start_at,
    end_at,
    first_sampled_at,
    last_sampled_at,
    samples,
    zone_offset_seconds / 3600.0 as samples_offset_hours
from rounded
where
    abs(offset_seconds - zone_offset_seconds) <= tolerance_seconds
    and abs(zone_offset_seconds) between 900 and 14 * 3600
    -- The other end of the samples where the offset puts it: later, their first at the end or at start + k;
    -- earlier, their last at the start or at end - k.
    and case
        when zone_offset_seconds > 0 then abs(
            {{ seconds_between('start_at', 'first_sampled_at') }}
            - case when zone_offset_seconds > span_seconds then zone_offset_seconds else span_seconds end
        )
        else abs(
            {{ seconds_between('start_at', 'last_sampled_at') }}
            - case when -zone_offset_seconds > span_seconds then span_seconds + zone_offset_seconds else 0 end
        )
    end <= tolerance_seconds
