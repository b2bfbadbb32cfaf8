with source as (
    select * from {{ source('raw', 'batch_registry') }}
),

-- A reference file delivered again (a whole new export, other bytes): each batch once, from the newest file.
newest as (
    {{ newest_delivery('source', ['batch_id']) }}
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
        contract_version,
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
