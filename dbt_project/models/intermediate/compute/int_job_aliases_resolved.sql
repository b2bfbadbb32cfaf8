-- Every id a record may name a scheduler job by -> the job. Device samples and step records carry the Slurm JobID
-- or, for array tasks, the raw id (job_id_raw); both resolve to the JobID here, once for all their readers.
with jobs as (
    select job_id, job_id_raw from {{ ref('int_jobs_attributed') }}
)

select job_id as alias_job_id, job_id from jobs
union
select job_id_raw as alias_job_id, job_id from jobs
where job_id_raw is not null and job_id_raw <> job_id
