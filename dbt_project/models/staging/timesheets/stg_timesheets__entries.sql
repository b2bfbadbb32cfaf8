-- Harvest time entries as exported; the only model that holds people's names (R20). No joins here: the task's role
-- and category and the batch come in int_labour_costed.
-- Harvest entries carry no id: a time report exported again (month to date) repeats every earlier entry, which
-- counts once.
with newest as (
    {{ identical_lines_once(source('raw', 'timesheets')) }}
),

renamed as (
    select
        entry_date,
        client,
        project,
        project_code,
        task,
        notes,
        hours,
        billable,
        first_name,
        last_name,
        roles,
        cost_rate,
        currency,
        source_file,
        source_line
    from newest
)

select * from renamed
