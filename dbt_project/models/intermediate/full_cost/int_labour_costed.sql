-- One row per timesheet entry (I7, R9): the batch from the Harvest Project Code ('unattributed' when it is not a
-- registered batch, R1), the task's role and category from the batch's contract version, and the entry's cost.
-- Money: hours x rate is rounded to the cent once per entry (labour_cost, and likewise its low and high). An entry
-- with a Cost Rate is 'measured' (low = high = cost); without one it is 'assumed' at the contract's typical rate for
-- the role, with the range low..high from the contract's low and high rates.
-- cost_rate is a person's rate: confidential (R20). Names stay in staging; person_key (staging's, where the newest
-- export's box and the 24-hour day match people by it) is a hash of the name as a reader compares it
-- (macros/person_key.sql): one person however an export writes the name, spaces, accents and case.
with entries as (
    select * from {{ ref('stg_timesheets__entries') }}
),

parameters as (
    select * from {{ ref('stg_contract__parameters') }}
),

assumed_rates as (
    select
        contract_version,
        {{ dbt.split_part('parameter_name', "'.'", 2) }} as role,
        {{ dbt.split_part('parameter_name', "'.'", 3) }} as rate_level,
        -- Whole cents in the contract: the cast restores the exact rate from the parameter table's double.
        cast(parameter_value as decimal(18, 2)) as rate
    from parameters
    where parameter_name like 'labour_assumed_rate.%'
),

attributed as (
    {{ resolve_batch('entries', 'project_code') }}
),

-- Each task's role and category per contract version, and which version is the newest to know the task.
task_classes as (
    select
        task_roles.contract_version,
        task_roles.code as task,
        task_roles.category as role,
        task_categories.category as labour_category,
        row_number() over (
            partition by task_roles.code
            order by {{ newest_contract_version_first('task_roles.contract_version') }}
        ) as newest_first
    from {{ ref('stg_contract__enumerations') }} as task_roles
    {{ join_contract_enumeration('task_categories', 'labour_task_category', 'task_roles.contract_version',
                                 code='task_roles.code', join='inner') }}
    where task_roles.enumeration = 'labour_task_role'
),

-- Classified under the batch's own contract version; a task that version does not know (timesheets move faster
-- than registrations) is classified and rated under the newest version that knows it, and says so: the entry stays
-- in the batch's cost instead of failing the night.
classified as (
    select
        attributed.*,
        coalesce(own.role, newest.role) as role,
        coalesce(own.labour_category, newest.labour_category) as labour_category,
        coalesce(own.contract_version, newest.contract_version) as classified_under_version
    from attributed
    left join task_classes as own
        on own.task = attributed.task
        and own.contract_version = attributed.contract_version
    left join task_classes as newest
        on newest.task = attributed.task
        and newest.newest_first = 1
),

rated as (
    select
        classified.*,
        coalesce(classified.cost_rate, typical.rate) as applied_rate,
        coalesce(classified.cost_rate, low.rate) as low_rate,
        coalesce(classified.cost_rate, high.rate) as high_rate
    from classified
    left join assumed_rates as typical
        on typical.contract_version = classified.classified_under_version
        and typical.role = classified.role
        and typical.rate_level = 'typical'
    left join assumed_rates as low
        on low.contract_version = classified.classified_under_version
        and low.role = classified.role
        and low.rate_level = 'low'
    left join assumed_rates as high
        on high.contract_version = classified.classified_under_version
        and high.role = classified.role
        and high.rate_level = 'high'
)

select
    entry_date,
    cast({{ dbt.date_trunc('month', 'entry_date') }} as date) as month_start,
    batch_key as batch_id,
    project_code,
    person_key,
    task,
    role,
    labour_category as category,
    hours,
    cost_rate,
    cast(hours * applied_rate as decimal(18, 2)) as labour_cost,
    cast(hours * low_rate as decimal(18, 2)) as labour_cost_low,
    cast(hours * high_rate as decimal(18, 2)) as labour_cost_high,
    case when cost_rate is not null then 'measured' else 'assumed' end as evidence_level,
    contract_version,
    classified_under_version,
    source_file,
    source_line
from rated
