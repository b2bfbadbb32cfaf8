-- Harvest time entries as exported; the only model that holds people's names (R20). No joins here: the task's role
-- and category and the batch come in int_labour_costed.
-- Harvest entries carry no id: a time report exported again (month to date) repeats every earlier entry, which
-- counts once. Client and project names, notes, the billable flag, the person's roles and cost rate may be edited
-- between exports: not compared, the newest kept. An edit of date, person, task or hours makes another entry.
with newest as (
    {{ identical_lines_once(source('raw', 'timesheets'),
                            ignore=['client', 'project', 'notes', 'billable', 'roles', 'cost_rate']) }}
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
