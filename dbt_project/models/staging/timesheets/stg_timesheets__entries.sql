-- Harvest time entries as exported; the only model that holds people's names (R20). No joins here: the task's role
-- and category and the batch come in int_labour_costed.
-- Harvest entries carry no id: a time report exported again (month to date) repeats every earlier entry, which
-- counts once. Client and project names, notes, the billable flag, the person's roles and cost rate may be edited
-- between exports: not compared, the newest kept. An edit of date, person, task or hours makes another entry.
-- The ignored columns are in the model's meta too: rows held after a failed test are held in every export of their
-- entry (cost_pipeline/dbt_failures.py).
{%- set ignore = ['client', 'project', 'notes', 'billable', 'roles', 'cost_rate'] %}
{{ config(meta={'identical_lines_ignore': ignore}) }}

with newest as (
    {{ identical_lines_once(source('raw', 'timesheets'), ignore=ignore) }}
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
