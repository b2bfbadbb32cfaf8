-- Harvest time entries as exported; the only model that holds people's names (R20). No joins here: the task's role
-- and category and the batch come in int_labour_costed.
-- Harvest entries carry no id: a time report exported again (month to date) repeats every earlier entry, which
-- counts once. Client and project names, notes, the billable flag, the person's roles and cost rate may be edited
-- between exports: not compared, the newest kept.
-- An entry whose date, person, task, project or hours were edited between two exports is another line in each: the
-- newer export (the one that arrived later, then the last by file name, as every source's newest delivery:
-- macros/newest_delivery.sql) replaces what an older one says within what the
-- newer one covers. Harvest filters a report by sets of people, projects and tasks and by a date range, so an export
-- covers at least every (person, project, task) it holds one of each of, over its first to its last date: an older
-- entry inside that box is in the newer export as it is now, or was edited or deleted since. An older entry outside
-- it (another project of a report filtered by project, a day the newer report does not reach) stays. The box is what
-- the file says (raw.timesheets_extent, written at ingest from every row of the file), not what raw holds of it: a
-- row of the newer export quarantined at ingest or held after a failed test still says its person, project, task and
-- day are covered, so the older export's entry it edited does not count again (the row itself counts nowhere).
-- The ignored columns are in the model's meta too: rows held after a failed test are held in every export of their
-- entry (cost_pipeline/dbt_failures.py).
{%- set ignore = ['client', 'project', 'notes', 'billable', 'roles', 'cost_rate'] %}
{{ config(meta={'identical_lines_ignore': ignore}) }}

with newest as (
    select
        deliveries.*,
        {{ person_key('deliveries.first_name', 'deliveries.last_name') }} as person_key
    from (
        {{ identical_lines_once(source('raw', 'timesheets'), ignore=ignore) }}
    ) as deliveries
),

-- Every row each export holds, quarantined and held rows included (raw.timesheets_extent); an export loaded before
-- the extent was recorded (raw keeps its rows after its file left the landing folder) by its raw rows, or its box
-- would vanish and the entries it superseded count again.
extent as (
    select
        source_file,
        file_sha256,
        entry_date,
        {{ person_key('first_name', 'last_name') }} as person_key,
        project_code,
        task
    from (
        select source_file, file_sha256, entry_date, first_name, last_name, project_code, task
        from {{ source('raw', 'timesheets_extent') }}
        union all
        select source_file, file_sha256, entry_date, first_name, last_name, project_code, task
        from {{ source('raw', 'timesheets') }}
        where source_file not in (select distinct source_file from {{ source('raw', 'timesheets_extent') }})
    ) as said
),

-- What each export covers: its first and last date, and the people, projects and tasks it holds; and its place in
-- the order of delivery (when its bytes arrived, an export without an arrival the oldest; then its name).
exports as (
    select
        covered.source_file,
        covered.first_date,
        covered.last_date,
        row_number() over (
            order by covered.arrived_at nulls first, covered.source_file
        ) as delivery_order
    from (
        select
            extent.source_file,
            min(extent.entry_date) as first_date,
            max(extent.entry_date) as last_date,
            max(arrivals.arrived_at) as arrived_at
        from extent
        left join {{ file_arrivals() }} as arrivals
            on extent.file_sha256 = arrivals.arrived_sha256
        group by extent.source_file
    ) as covered
),

-- A person is their name as a reader compares it (macros/person_key.sql): a newer export that writes "Alice Zhang"
-- as "alice  zhang", with a no-break space or an accent decomposed, covers her entries as the older one wrote them.
export_people as (
    select distinct source_file, person_key from extent
),

export_projects as (
    select distinct source_file, coalesce(project_code, '') as project_code
    from extent
),

export_tasks as (
    select distinct source_file, task from extent
),

-- The entries a newer export covers: it says what they are now.
superseded as (
    select distinct
        newest.source_file,
        newest.source_line
    from newest
    inner join exports as delivered_in
        on newest.source_file = delivered_in.source_file
    inner join exports
        on delivered_in.delivery_order < exports.delivery_order
        and newest.entry_date >= exports.first_date
        and newest.entry_date <= exports.last_date
    inner join export_people
        on exports.source_file = export_people.source_file
        and newest.person_key = export_people.person_key
    inner join export_projects
        on exports.source_file = export_projects.source_file
        and coalesce(newest.project_code, '') = export_projects.project_code
    inner join export_tasks
        on exports.source_file = export_tasks.source_file
        and newest.task = export_tasks.task
),

current_entries as (
    select newest.*
    from newest
    left join superseded
        on newest.source_file = superseded.source_file
        and newest.source_line = superseded.source_line
    where superseded.source_file is null
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
        person_key,
        roles,
        cost_rate,
        currency,
        source_file,
        source_line
    from current_entries
)

select * from renamed
