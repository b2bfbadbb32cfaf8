with source as (
    select * from {{ source('raw', 'batch_registry') }}
),

-- A batch keeps the contract version it was first registered with (R3), whatever a later registry file says.
registrations as (
    select
        source.*,
        first_value(contract_version) over (
            partition by batch_id order by source_file, source_line
        ) as registered_contract_version
    from source
),

-- A registry exported whole again (other bytes): each batch once, its other attributes from the newest file.
newest as (
    {{ newest_delivery('registrations', ['batch_id']) }}
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
