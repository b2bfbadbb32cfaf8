-- One row per external-service invoice (I8, R9). The batch from the invoice's batch_id ('unattributed' when it is
-- not a registered batch, R1). Month rule: the month the service was delivered (service_month) when the file gives
-- it, else the month of invoiced_on; an accrual (no invoiced_on) must give service_month (ingest quarantines it
-- otherwise, rule accrual_service_month). An invoiced line is 'billed' (low = high = amount); an accrual is
-- 'pending', its range amount -+ pending_range_pct % from the batch's contract version, rounded to the cent once
-- per line. An invoice listed both as an accrual and as billed counts once, billed, and an accrual settled by the
-- vendor's invoice for its batch, stage and month does not count (stg_services__invoices).
with invoices as (
    select * from {{ ref('stg_services__invoices') }}
),

parameters as (
    select * from {{ ref('stg_contract__parameters') }}
),

attributed as (
    {{ resolve_batch('invoices', 'batch_id') }}
),

ranged as (
    select
        attributed.*,
        case when attributed.invoiced_on is null then 'pending' else 'billed' end as evidence_level,
        case when attributed.invoiced_on is null then pending_range.parameter_value else 0 end as range_pct
    from attributed
    left join parameters as pending_range
        on pending_range.contract_version = attributed.contract_version
        and pending_range.parameter_name = 'pending_range_pct'
)

select
    invoice_id,
    vendor,
    batch_key as batch_id,
    stage,
    month_start,
    invoiced_on,
    amount,
    currency,
    -- range_pct is a whole percentage in the contract: as decimal(9, 4) it is exact.
    cast(amount * (100 - cast(range_pct as decimal(9, 4))) / 100 as decimal(18, 2)) as amount_low,
    cast(amount * (100 + cast(range_pct as decimal(9, 4))) / 100 as decimal(18, 2)) as amount_high,
    evidence_level,
    contract_version,
    source_file,
    source_line
from ranged
