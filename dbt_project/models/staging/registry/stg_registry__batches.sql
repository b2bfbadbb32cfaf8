-- A batch is its id compared case-folded (same_id): a registry file spelling B-8 as b-8 revises batch B-8, and the
-- newest delivery's spelling is the batch's (resolve_batch matches jobs, invoices, entries and objects to it).
with source as (
    select *, {{ same_id('batch_id') }} as batch_match from {{ source('raw', 'batch_registry') }}
),

-- A batch keeps the contract version it was first registered with (R3), whatever a later registry file says: its
-- oldest delivery (the file that arrived first, then the first by path and line: macros/newest_delivery.sql).
registrations as (
    select
        source.*,
        first_value(source.contract_version) over (
            partition by source.batch_match
            order by {{ delivery_order('source', 'arrivals', newest=false) }}
        ) as registered_contract_version
    from source
    left join {{ file_arrivals() }} as arrivals
        on source.file_sha256 = arrivals.arrived_sha256
),

-- A registry exported whole again (other bytes) or a later file revising a batch: each batch once, its other
-- attributes from its newest delivery (the file that arrived later).
newest as (
    {{ newest_delivery('registrations', ['batch_match']) }}
),

renamed as (
    select
        batch_id,
        project,
        goal,
        team,
        data_version,
        model_version,
        code_version,
        config_version,
        registered_contract_version as contract_version,
        budget_cost,
        budget_gpu_hours,
        max_trial_rounds,
        stop_condition,
        variance_boundary_pct,
        source_file,
        source_line
    from newest
)

select * from renamed
