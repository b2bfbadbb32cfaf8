-- One row per invoice (I8), an invoice being a vendor's invoice number (two vendors may use the same one; a vendor is
-- its name compared case-folded, same_id: LABELCRAFT is Labelcraft): an invoice listed both as an accrual and as
-- billed, or shipped again, counts once, its billed line, else its newest (the newest file and line win among
-- equals). The key is in the model's meta too: rows held after a failed test are held in every
-- line of their invoice (cost_pipeline/dbt_failures.py). An accrual is finance's estimate of a vendor's service to a
-- batch and stage in a month, under a reference of its own: the vendor's invoice for the same batch, stage and service
-- month (service_month, else the month of invoiced_on) settles it, and the accrual no longer counts (it stays in raw).
-- month_start is that service month. The vendor and the batch are compared case-folded (same_id, the batch as
-- resolve_batch reads it): an invoice from LABELCRAFT writing B-7 as b-7 settles Labelcraft's accrual for B-7.
{%- set record_key = [same_id('vendor'), 'invoice_id'] %}
{{ config(meta={'record_key': record_key}) }}

with source as (
    select * from {{ source('raw', 'service_invoices') }}
),

counted as (
    {{ newest_delivery('source', record_key, prefer='case when invoiced_on is null then 1 else 0 end') }}
),

months as (
    select
        counted.*,
        case
            when service_month is not null
                then {{ month_text_start('service_month') }}
            else cast({{ dbt.date_trunc('month', 'invoiced_on') }} as date)
        end as month_start
    from counted
),

billed_months as (
    select distinct vendor, batch_id, stage, month_start
    from months
    where invoiced_on is not null
),

unsettled as (
    select months.*
    from months
    left join billed_months
        on months.invoiced_on is null
        and {{ same_id('months.vendor') }} = {{ same_id('billed_months.vendor') }}
        and {{ same_id('months.batch_id') }} is not distinct from {{ same_id('billed_months.batch_id') }}
        and months.stage = billed_months.stage
        and months.month_start = billed_months.month_start
    where billed_months.vendor is null
),

renamed as (
    select
        invoice_id,
        vendor,
        batch_id,
        stage,
        amount,
        currency,
        invoiced_on,
        service_month,
        month_start,
        source_file,
        source_line
    from unsettled
)

select * from renamed
