with source as (
    select * from {{ source('raw', 'task_outcomes') }}
),

renamed as (
    select
        task_id,
        coalesce(task_category, 'uncategorised') as task_category,
        succeeded,
        judged_by,
        coalesce(human_minutes, 0) as human_minutes,
        human_cost_per_hour
    from source
)

select * from renamed
