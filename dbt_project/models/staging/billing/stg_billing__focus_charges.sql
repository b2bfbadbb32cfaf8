-- FOCUS lines carry no line id: a month-to-date export shipped again repeats every earlier line, which counts once.
-- The billing account and sub-account are compared: two accounts' lines alike in every other column are two charges.
-- A line loaded before they were kept has neither (raw keeps a gone file's rows as loaded): it is the same line as one
-- with them, its other columns equal, so a later export of it supersedes it (identical_lines_once's unkept).
-- A restatement is a line of its own (ChargeClass = Correction, or other amounts), so it is kept. The invoice id,
-- tags (and the batch read from them), resource name, commitment status and the names of who provides, publishes
-- and invoices it may be filled in or changed by a later export of the same line: not compared, the newest kept.
with newest as (
    {{ identical_lines_once(source('raw', 'billing_focus'),
                            ignore=['invoice_id', 'tags', 'batch_id', 'resource_name',
                                    'commitment_discount_status', 'provider_name', 'publisher_name',
                                    'invoice_issuer_name'],
                            unkept=['billing_account_id', 'sub_account_id']) }}
),

renamed as (
    select
        billing_account_id,
        sub_account_id,
        billing_period_start,
        billing_period_end,
        charge_period_start,
        charge_period_end,
        charge_category,
        coalesce(charge_class, 'Regular') as charge_class,
        charge_frequency,
        pricing_category,
        billed_cost,
        effective_cost,
        list_cost,
        contracted_cost,
        billing_currency,
        resource_id,
        resource_name,
        service_name,
        service_category,
        invoice_id,
        sku_id,
        consumed_quantity,
        consumed_unit,
        commitment_discount_id,
        commitment_discount_status,
        provider_name,
        publisher_name,
        invoice_issuer_name,
        tags,
        batch_id,
        source_file,
        source_line
    from newest
)

select * from renamed
