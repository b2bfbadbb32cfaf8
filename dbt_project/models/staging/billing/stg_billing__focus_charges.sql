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
-- Export runs (docs/inputs.md): a file an export manifest lists is of that run (export_run_id, export_run_manifest,
-- export_run_files how many data files the run wrote, export_run_at Azure's own time of it). A run is complete when
-- every file its manifest lists is loaded (raw holds rows of that many of its files); a file no manifest lists yet
-- in a run's folder or beside one is a run without a manifest (its folder), never complete. For each billing account
-- and billing period the lines of ONE run count: the newest complete one (with none complete, the newest run), its
-- place by Azure's time, then by arrival (when the newest of its files' bytes was first loaded: files of an older
-- run repeated byte for byte keep their arrival), then by manifest path (runs first loaded in one night), then by
-- run id. A later refresh that revised a line's amount counted both amounts (identical lines alone counted once),
-- and two AWS runs, whose manifests give no time, both counted. Lines of files no run holds are read as before.
-- raw keeps every run; only the lines read here are chosen.
{%- set focus = source('raw', 'billing_focus') %}
with runs as (
    select
        lines.export_run_id,
        lines.export_run_manifest,
        max(lines.export_run_files) as listed,
        count(distinct lines.source_file) as loaded,
        max(lines.export_run_at) as run_at,
        max(arrivals.arrived_at) as arrived_at
    from {{ focus }} as lines
    left join {{ file_arrivals() }} as arrivals
        on lines.file_sha256 = arrivals.arrived_sha256
    where lines.export_run_id is not null
    group by lines.export_run_id, lines.export_run_manifest
),

chosen_runs as (
    select billing_account_id, billing_period_start, export_run_id, export_run_manifest
    from (
        select
            periods.billing_account_id,
            periods.billing_period_start,
            periods.export_run_id,
            periods.export_run_manifest,
            row_number() over (
                partition by periods.billing_account_id, periods.billing_period_start
                order by
                    coalesce(runs.loaded >= runs.listed, false) desc,
                    runs.run_at desc nulls last,
                    runs.arrived_at desc nulls last,
                    runs.export_run_manifest desc nulls last,
                    runs.export_run_id desc
            ) as run_rank
        from (
            select distinct billing_account_id, billing_period_start, export_run_id, export_run_manifest
            from {{ focus }}
            where export_run_id is not null
        ) as periods
        inner join runs
            on runs.export_run_id = periods.export_run_id
            and runs.export_run_manifest is not distinct from periods.export_run_manifest
    ) as ranked
    where run_rank = 1
),

{%- set current_lines %}
    (
        select lines.*
        from {{ focus }} as lines
        left join chosen_runs
            on chosen_runs.billing_account_id is not distinct from lines.billing_account_id
            and chosen_runs.billing_period_start is not distinct from lines.billing_period_start
            and chosen_runs.export_run_id = lines.export_run_id
            and chosen_runs.export_run_manifest is not distinct from lines.export_run_manifest
        where lines.export_run_id is null
            or chosen_runs.export_run_id is not null
    )
{%- endset %}

newest as (
    {{ identical_lines_once(focus,
                            rows=current_lines,
                            ignore=['invoice_id', 'tags', 'batch_id', 'resource_name',
                                    'commitment_discount_status', 'provider_name', 'publisher_name',
                                    'invoice_issuer_name', 'export_run_id', 'export_run_at',
                                    'export_run_files', 'export_run_manifest'],
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
