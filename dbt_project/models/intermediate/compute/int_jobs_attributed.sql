-- A job holding MIG instances (docs/fractional_gpus.md) holds their compute slices over its GPU model's total, and
-- one holding Slurm GPU shards or CUDA MPS shares those over the ones that make a GPU, not whole GPUs:
-- allocated_gpu_equivalents and the GPU-seconds below count them so, and every cost after this model follows.
-- Jobs resolved to a registered batch (or 'unattributed', R1), with termination reason and category from the
-- contract version the batch was registered with, rerun reason and flag, lineage and repeated same-cause failures
-- (R6).
with jobs as (
    select * from {{ ref('int_jobs_unioned') }}
),

slice_totals as (
    {{ mig_slice_totals() }}
),

model_totals as (
    {{ mig_model_totals() }}
),

-- Shards and MPS shares that make a GPU: facts of the cluster's gres.conf, the newest contract's (ingest refuses a
-- count without its setting).
share_counts as (
    select shards_per_gpu, mps_per_gpu
    from ({{ contract_parameters({'slurm_shards_per_gpu': 'shards_per_gpu', 'slurm_mps_per_gpu': 'mps_per_gpu'}) }})
        as versions
    where contract_version = {{ latest_contract_version() }}
),

resolved as (
    {{ resolve_batch('jobs', 'batch_id') }}
),

attributed as (
    select
        resolved.*,
        case
            when resolved.batch_id is null then 'no_batch_label'
            when not resolved.is_registered_batch then 'batch_not_registered'
        end as unattributed_reason
    from resolved
),

with_reasons as (
    select
        attributed.*,
        case
            when attributed.state = 'COMPLETED' then state_map.category
            when attributed.end_reason is not null and state_map.category <> 'running' then attributed.end_reason
            else state_map.category
        end as termination_reason,
        -- A run repeats an earlier one when its run reason is a rerun reason, or when it restarts one (restart_of)
        -- and carried no reason: the lineage link says it is a rerun (R6), read as the contract's failure_retry
        -- (fct_runs_every_restart_has_run_reason warns for each such run). A stated reason that is not a rerun
        -- reason is the contract's word and stands.
        case
            when run_reasons.is_rerun then attributed.run_reason
            when attributed.run_reason is null and attributed.restart_of is not null then 'failure_retry'
        end as rerun_reason
    from attributed
    {{ join_contract_enumeration('state_map', 'sacct_state', 'attributed.contract_version',
                                 code='attributed.state') }}
    {{ join_contract_enumeration('run_reasons', 'run_reason', 'attributed.contract_version',
                                 code='attributed.run_reason') }}
),

-- The slices of the GPU model a job's Slurm GRES type names (nvidia_a30_2g.11gb: a30), before its profile's.
model_slices as (
    select
        with_reasons.job_key,
        max(model_totals.total_slices) as total_slices
    from with_reasons
    inner join model_totals
        on with_reasons.contract_version = model_totals.contract_version
        and with_reasons.mig_gpu_type like {{ dbt.concat(["'%'", 'model_totals.model', "'%'"]) }}
    group by with_reasons.job_key
),

with_categories as (
    select
        with_reasons.*,
        coalesce(model_slices.total_slices, {{ total_slices_of() }}) as gpu_total_slices,
        -- A request written untyped (--gpus=1: ReqTRES gres/gpu=1) that the scheduler filled with MIG instances only
        -- asked for instances like them: it is read at the allocated instances' slices per instance.
        case when with_reasons.mig_instances_requested = 0 and with_reasons.gpus_allocated > 0
            and with_reasons.mig_instances_allocated = with_reasons.gpus_allocated
            then with_reasons.gpus_requested else with_reasons.mig_instances_requested end as request_mig_instances,
        case when with_reasons.mig_instances_requested = 0 and with_reasons.gpus_allocated > 0
            and with_reasons.mig_instances_allocated = with_reasons.gpus_allocated
            then cast(with_reasons.gpus_requested as double) * with_reasons.mig_slices_allocated
            / with_reasons.mig_instances_allocated
            else with_reasons.mig_slices_requested end as request_mig_slices,
        reasons.category as termination_category,
        coalesce(categories.is_same_cause, false) as is_same_cause_category
    from with_reasons
    {{ join_contract_enumeration('reasons', 'termination_reason', 'with_reasons.contract_version',
                                 code='with_reasons.termination_reason') }}
    {{ join_contract_enumeration('categories', 'termination_category', 'with_reasons.contract_version',
                                 code='reasons.category') }}
    {{ join_slice_totals('with_reasons.contract_version', 'with_reasons.gpu_instance_profile') }}
    left join model_slices on with_reasons.job_key = model_slices.job_key
),

-- A lineage label names a JobID: the parent is the job with that id that int_job_aliases_resolved gives the
-- child's start (or submit) time to, so a reused JobID points at the run before, not at a later namesake.
parents as (
    select
        with_categories.job_key,
        aliases.job_key as parent_job_key
    from with_categories
    inner join {{ ref('int_job_aliases_resolved') }} as aliases
        on aliases.alias_job_id = coalesce(with_categories.restart_of, with_categories.continues)
        and {{ held_by_alias('aliases', 'coalesce(with_categories.start_at, with_categories.submit_at)') }}
)

select
    with_categories.job_key,
    with_categories.cluster,
    with_categories.job_id,
    with_categories.job_id_raw,
    with_categories.scheduler,
    with_categories.batch_key as batch_id,
    with_categories.batch_id as batch_label,
    with_categories.unattributed_reason,
    with_categories.contract_version,
    coalesce(with_categories.phase, 'unlabelled') as phase,
    with_categories.phase is not null as has_phase_label,
    with_categories.run_reason,
    with_categories.rerun_reason,
    with_categories.rerun_reason is not null as is_rerun,
    with_categories.state,
    with_categories.cancelled_by,
    with_categories.termination_reason,
    with_categories.termination_category,
    with_categories.termination_category not in ('completed', 'running') as is_failed,
    with_categories.is_same_cause_category
        and with_categories.termination_category not in ('completed', 'running')
        and count(*) over (
            partition by with_categories.batch_key, with_categories.termination_reason
        ) > 1 as is_repeated_same_cause,
    case
        when with_categories.restart_of is not null then 'restart_of'
        when with_categories.continues is not null then 'continues'
    end as lineage_type,
    coalesce(with_categories.restart_of, with_categories.continues) as lineage_job_id,
    parents.parent_job_key as lineage_job_key,
    case
        when coalesce(with_categories.restart_of, with_categories.continues) is null then null
        else parents.parent_job_key is not null
    end as lineage_job_found,
    with_categories.restarts,
    with_categories.submit_at,
    with_categories.eligible_at,
    with_categories.start_at,
    with_categories.end_at,
    with_categories.is_running,
    with_categories.running_seen_at,
    with_categories.occupied_until_at,
    with_categories.gpus_requested,
    with_categories.gpus_allocated,
    with_categories.mig_instances_allocated,
    with_categories.gpu_instance_profile,
    with_categories.gpu_total_slices,
    {{ gpu_equivalents('with_categories', 'requested', 'with_categories.gpu_total_slices', 'share_counts',
        'with_categories.request_mig_instances', 'with_categories.request_mig_slices') }} as requested_gpu_equivalents,
    {{ gpu_equivalents('with_categories', 'allocated', 'with_categories.gpu_total_slices', 'share_counts') }}
        as allocated_gpu_equivalents,
    with_categories.shards_allocated,
    with_categories.mps_allocated,
    with_categories.time_limit_seconds,
    with_categories.array_tasks,
    with_categories.occupied_seconds,
    {{ gpu_equivalent_seconds('with_categories', 'requested', 'with_categories.gpu_total_slices', 'share_counts',
        'with_categories.time_limit_seconds * coalesce(with_categories.array_tasks, 1)',
        'with_categories.request_mig_instances',
        'with_categories.request_mig_slices') }} as requested_gpu_seconds,
    -- A Kubernetes job that held fewer GPUs in some segments (preempted with 8, started again with 1) occupied its
    -- allocation seconds (each segment's seconds x its GPUs), not its most GPUs x all its seconds.
    case when with_categories.scheduler = 'kubernetes' and with_categories.gpus_allocated > 0
        then cast(round({{ gpu_equivalent_seconds('with_categories', 'allocated', 'with_categories.gpu_total_slices',
            'share_counts', 'cast(with_categories.occupied_allocation_seconds as double) '
            ~ '/ with_categories.gpus_allocated') }}, 0) as bigint)
        else {{ gpu_equivalent_seconds('with_categories', 'allocated', 'with_categories.gpu_total_slices',
            'share_counts', 'with_categories.occupied_seconds') }}
    end as occupied_gpu_seconds
from with_categories
left join parents on with_categories.job_key = parents.job_key
left join share_counts on 1 = 1
