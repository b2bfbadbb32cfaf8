with source as (
    select * from {{ source('raw', 'task_outcomes') }}
),

-- A reference file delivered again (a whole new export, other bytes): each task's outcome once, from the newest file.
newest as (
    {{ newest_delivery('source', ['task_id']) }}
),

renamed as (
    select
        task_id,
        coalesce(task_category, 'uncategorised') as task_category,
        succeeded,
        judged_by,
        coalesce(human_minutes, 0) as human_minutes,
        human_cost_per_hour,
        source_file,
        source_line
    from newest
)

select * from renamed
