-- One row per invoice (I8), an invoice being a vendor's invoice number (two vendors may use the same one): an invoice
-- listed both as an accrual and as billed, or shipped again, counts once, its billed line, else its newest (the newest
-- file and line win among equals). The key is in the model's meta too: rows held after a failed test are held in every
-- line of their invoice (cost_pipeline/dbt_failures.py).
{%- set record_key = ['vendor', 'invoice_id'] %}
{{ config(meta={'record_key': record_key}) }}

with source as (
    select * from {{ source('raw', 'service_invoices') }}
),

counted as (
    {{ newest_delivery('source', record_key, prefer='case when invoiced_on is null then 1 else 0 end') }}
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
        source_file,
        source_line
    from counted
)

select * from renamed
