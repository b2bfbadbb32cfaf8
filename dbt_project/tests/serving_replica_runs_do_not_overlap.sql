-- A replica is one set of GPUs: two runs of one replica id that overlap in time would count its GPU-hours and their
-- cost twice. Two such runs in one file are quarantined at ingest (rule replica_runs.overlap), and a newer file's run
-- supersedes the older files' runs it overlaps (a list correcting a run's start: stg_serving__replicas), so nothing
-- should be left here but overlapping runs of one file loaded before the ingest rule existed. Each such pair is
-- listed, with both rows' files and lines (a warning; the rows are kept in the audit schema).
{{ config(severity='warn', store_failures=true, schema='audit') }}

with runs as (
    select replica_key, replica_id, started_at, ended_at, source_file, source_line
    from {{ ref('stg_serving__replicas') }}
)

select
    earlier.replica_id,
    earlier.started_at,
    earlier.ended_at,
    later.started_at as later_started_at,
    later.ended_at as later_ended_at,
    earlier.source_file,
    earlier.source_line,
    later.source_file as later_source_file,
    later.source_line as later_source_line
from runs as earlier
inner join runs as later
    on {{ same_id('earlier.replica_id') }} = {{ same_id('later.replica_id') }}
    and earlier.replica_key <> later.replica_key
    and earlier.started_at <= later.started_at
    and later.started_at < earlier.ended_at
