-- The cash book (R12): what was paid, by month and item - capacity purchases on their purchase date, facility
-- and serving-fleet costs in their month, cloud bills at BilledCost in their billing period (a line without an
-- invoice yet is pending), vendor invoices in the month invoiced, whatever month they were for (an accrual is pending
-- in its service month). Never added to the resource or service book: a server bought in January is cash in January
-- and resource cost over three years.
with purchases as (
    select
        cast({{ dbt.date_trunc('month', 'purchased_on') }} as date) as month_start,
        'capacity_purchase' as item,
        'billed' as evidence_level,
        quantity * unit_price as amount
    from {{ ref('stg_ledger__purchases') }}
),

facility as (
    select cost_month as month_start, 'facility' as item, 'billed' as evidence_level, amount
    from {{ ref('stg_ledger__facility_costs') }}
),

serving_fleet as (
    select cost_month as month_start, 'serving_fleet' as item, 'billed' as evidence_level, amount
    from {{ ref('stg_serving__monthly_costs') }}
),

cloud as (
    select
        billing_month as month_start,
        'cloud_bill' as item,
        case when invoice_id is null then 'pending' else 'billed' end as evidence_level,
        -- The line's whole cents (int_focus_charges_attributed), as every book sums them.
        cast(billed_cost_cents / 100.0 as decimal(18, 2)) as amount
    from {{ ref('int_focus_charges_attributed') }}
),

-- Vendor invoices in the month invoiced (the cost lines date an invoice by the month it was for: its service_month
-- when given); an accrual not yet invoiced is pending in its service month.
services as (
    select
        case
            when invoiced_on is null then month_start
            else cast({{ dbt.date_trunc('month', 'invoiced_on') }} as date)
        end as month_start,
        'external_service' as item,
        evidence_level,
        amount
    from {{ ref('int_service_invoices_costed') }}
),

payments as (
    select * from purchases
    union all
    select * from facility
    union all
    select * from serving_fleet
    union all
    select * from cloud
    union all
    select * from services
),

grouped as (
    select
        month_start,
        item,
        evidence_level,
        cast(round(sum(amount), 2) as decimal(18, 2)) as amount,
        cast(count(*) as bigint) as lines
    from payments
    group by month_start, item, evidence_level
)

select
    month_start as month,
    {{ latest_contract_version() }} as contract_version,
    item,
    evidence_level,
    amount,
    lines,
    {{ reporting_currency() }} as currency
from grouped
