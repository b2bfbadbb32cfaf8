-- The batches' measured energy costs no more than the month's power bill: a gap row of fct_energy_reconciliation
-- below zero means the energy the device samples measured is priced above everything the facility paid for power
-- (a unit error in the telemetry, such as milliwatts read as watts, or the contract's pue or price_per_kwh off).
-- Each such month is listed with its bill, the measured energy's cost and the gap (a warning; the rows are kept in
-- the audit schema): the figures stay as measured, for a person to judge.
{{ config(severity='warn', store_failures=true, schema='audit') }}

select
    month_start,
    power_bill,
    power_bill - energy_cost as measured_energy_cost,
    energy_cost as gap
from {{ ref('fct_energy_reconciliation') }}
where part = 'gap' and energy_cost < 0
