-- Ledger lines carry no id: the newest file holding a month's item (the ledger exported again, whole or a
-- corrected line) says what it cost, and an older file's lines of that month and item no longer count, changed or
-- not (counted both, a corrected line added to the one it corrects). A line repeated within one file is a cost of
-- its own.
-- The cell's month is the month the text names (month_text_start): `2026-11` and `2026-11-01` are one cell.
with months as (
    select
        *,
        {{ month_text_start('month') }} as cost_month
    from {{ source('raw', 'ledger_facility') }}
),

newest as (
    {{ newest_file_lines('months', ['cost_month', 'item']) }}
),

renamed as (
    select
        cost_month,
        item,
        amount,
        currency,
        source_file,
        source_line
    from newest
)

select * from renamed
