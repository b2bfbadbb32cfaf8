with source as (
    select * from {{ source('raw', 'service_invoices') }}
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
    from source
)

select * from renamed
