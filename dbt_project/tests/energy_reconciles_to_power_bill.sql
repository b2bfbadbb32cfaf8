-- Every month's rows of fct_energy_reconciliation (the batches' shares and the gap) add up to its power bill to
-- the cent: nothing of the bill is lost or counted twice. Returns each month where they do not.
select
    month_start,
    max(power_bill) as power_bill,
    sum(energy_cost) as energy_cost
from {{ ref('fct_energy_reconciliation') }}
where power_bill is not null
group by month_start
having sum(energy_cost) <> max(power_bill)
