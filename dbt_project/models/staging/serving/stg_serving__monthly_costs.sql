-- Ledger lines carry no id: the newest file holding a month's item (the ledger exported again, whole or a
-- corrected line) says what it cost, and an older file's lines of that month and item no longer count, changed or
-- not (counted both, a corrected line added to the one it corrects). A line repeated within one file is a cost of
-- its own.
with newest as (
    {{ newest_file_lines(source('raw', 'serving_monthly_costs'), ['month', 'item']) }}
),

renamed as (
    select
        cast({{ dbt.concat(["substring(month, 1, 7)", "'-01'"]) }} as date) as cost_month,
        item,
        amount,
        source_file,
        source_line
    from newest
)

select * from renamed
