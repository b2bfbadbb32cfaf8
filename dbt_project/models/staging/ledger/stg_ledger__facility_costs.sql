-- Ledger lines carry no id: a line equal in every column to a line of another file (the ledger exported again)
-- counts once; a line repeated within one file is a cost of its own.
with newest as (
    {{ identical_lines_once(source('raw', 'ledger_facility')) }}
),

renamed as (
    select
        cast({{ dbt.concat(["substring(month, 1, 7)", "'-01'"]) }} as date) as cost_month,
        item,
        amount,
        currency,
        source_file,
        source_line
    from newest
)

select * from renamed
