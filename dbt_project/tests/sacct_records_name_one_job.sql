-- A sacct record lacking Cluster or Submit is the job its JobID's other records name, when they name one
-- (stg_scheduler__sacct_jobs). When they name two it could be either: it stays a job of its own, and if it was one of
-- them its GPU time counts twice. Each such record is listed with the jobs it could be, by file and line (a warning;
-- the rows are kept in the audit schema): an export of the same cluster with the missing field, or retracting the
-- record's file, settles it.
{{ config(severity='warn', store_failures=true, schema='audit') }}

with records as (
    select job_key, cluster, job_id, submit_at, source_file, source_line
    from {{ ref('stg_scheduler__sacct_jobs') }}
)

select
    record.job_key,
    record.job_id,
    record.source_file,
    record.source_line,
    count(*) as jobs_it_could_be,
    min(other.job_key) as first_job_it_could_be,
    max(other.job_key) as last_job_it_could_be
from records as record
inner join records as other
    on record.job_id = other.job_id
    and record.job_key <> other.job_key
    and (
        (
            record.cluster is null and other.cluster is not null
            and (record.submit_at is null or other.submit_at is null or other.submit_at = record.submit_at)
        )
        or (
            record.submit_at is null and other.submit_at is not null
            and (record.cluster is null or other.cluster is null or other.cluster = record.cluster)
        )
    )
group by record.job_key, record.job_id, record.source_file, record.source_line
