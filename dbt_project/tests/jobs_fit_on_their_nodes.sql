-- A Slurm job on owned capacity holds no more whole GPUs than its nodes have: sacct's NNodes x the most GPUs one unit
-- of the procurement ledger holds (gpus_per_unit). Returns each job over it, with its file and line; the night fails.

-- The ledger names no hosts, so its largest unit bounds every node. AllocTRES gres/gpu=64 on one node of 8-GPU servers
-- was priced as 64 GPU-hours an hour, taking owned capacity cost from serving and every other job. The night fails,
-- as on any sacct record a staging test refuses: scheduler rows are read through, never held. Not checked: a cloud
-- job (FOCUS-billed or on a rented cluster, int_job_months_costed), whose nodes the ledger does not hold; a Kubernetes
-- job (no node count); a job without NNodes; a ledger without GPUs. MIG instances and GPU shares are not whole GPUs
-- and are not counted. In Dagster it is an asset check on the sacct jobs (meta.dagster.ref: it reads several models).
{{ config(meta={'dagster': {'ref': {'name': 'stg_scheduler__sacct_jobs'}}}) }}

with largest_unit as (
    select max(gpus_per_unit) as gpus_per_unit
    from {{ ref('stg_ledger__purchases') }}
    where gpus_per_unit > 0
),

owned_jobs as (
    select distinct job_key
    from {{ ref('int_job_months_costed') }}
    where cost_source = 'owned_capacity'
)

select
    sacct.job_key,
    sacct.node_count,
    sacct.node_list,
    sacct.gpus_allocated - coalesce(sacct.mig_instances_allocated, 0) as whole_gpus_allocated,
    largest_unit.gpus_per_unit as most_gpus_per_unit,
    sacct.source_file,
    sacct.source_line
from {{ ref('stg_scheduler__sacct_jobs') }} as sacct
inner join owned_jobs on sacct.job_key = owned_jobs.job_key
cross join largest_unit
where
    sacct.record_type = 'allocation'
    and sacct.node_count > 0
    and sacct.gpus_allocated - coalesce(sacct.mig_instances_allocated, 0)
    > sacct.node_count * largest_unit.gpus_per_unit
