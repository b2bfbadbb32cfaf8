-- The facility's power bill per month (the ledger's facility item power, electricity and cooling) in whole cents:
-- the total that measured energy is reconciled against (docs/energy.md).
select
    cost_month as month_start,
    cast(sum(amount) * 100 as bigint) as power_bill_cents
from {{ ref('stg_ledger__facility_costs') }}
where item = 'power'
group by cost_month
