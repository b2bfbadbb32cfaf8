-- FOCUS lines carry no line id: a month-to-date export shipped again repeats every earlier line, which counts once.
-- The billing account and sub-account are compared: two accounts' lines alike in every other column are two charges.
-- An export need not have every FOCUS column, and a column it does not have is unknown, not null: its lines are the
-- same lines as those of another file that has it and equal them in every column both files have (identical_lines_
-- once's optional). Optional here are the columns FOCUS never leaves null where an export has them (so a file
-- without a value in one on any line has not got it), and the sub-account id, which rows loaded before the account
-- ids were kept lack with the account id. Without this, the demo's export again without ListCost and ContractedCost
-- counted every line twice (the cash book 142.00 -> 284.00).
-- A restatement is a line of its own (ChargeClass = Correction, or other amounts), so it is kept. The invoice id,
-- tags (and the batch read from them), resource name, commitment status and the names of who provides, publishes
-- and invoices it may be filled in or changed by a later export of the same line: not compared, the newest kept.
with newest as (
    {{ identical_lines_once(source('raw', 'billing_focus'),
                            ignore=['invoice_id', 'tags', 'batch_id', 'resource_name',
                                    'commitment_discount_status', 'provider_name', 'publisher_name',
                                    'invoice_issuer_name'],
                            optional=['billing_account_id', 'sub_account_id', 'billing_period_start',
                                      'billing_period_end', 'charge_category', 'charge_frequency', 'list_cost',
                                      'contracted_cost', 'billing_currency', 'service_category',
                                      'service_name']) }}
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
