-- FOCUS charge lines resolved to a batch (R9, R12): a line whose ResourceId names one scheduler job (the whole id,
-- or for a Kubernetes job its last '/' segment: an EKS job's ARN; a Slurm JobID such as 1001 may end any cloud
-- resource's id, /instances/1001) is that job's batch's, whatever its Tags say, 'unattributed' when the job is in
-- no registered batch; otherwise the batch key from Tags when it names a registered batch; everything else stays
-- visible as 'unattributed' with the reason.
-- The job wins because the compute marts charge a cloud job's bill to the job (int_job_months_costed): following
-- the tag here put one line's money in two batches, the tag's in fct_batch_costs and the job's in fct_batch_compute.
-- A tag that names another batch than the job's is flagged (tag_disagrees; a warning test names the lines).
-- Amounts are kept as exported. A JobID that names several jobs (reused) names the one that held it when the charge
-- period began (int_job_aliases_resolved).
{#- A bill's cents: the lines of one invoice (a billing account's billing period, in its currency) add up to the
    invoice's exact sum rounded once; inside it the lines are taken in the order of every book's grouping columns, so
    each book's group is a run of consecutive lines and within a cent of its own exact sum. -#}
{%- set invoice = ['billing_account_id', 'billing_month', 'billing_currency'] %}
{%- set book_order = [
    'month_start', 'batch_id', 'job_key', 'service_category', 'service_name', 'resource_id', 'invoice_id is null',
    'is_correction', 'source_file', 'source_line'] %}

with charges as (
    select * from {{ ref('stg_billing__focus_charges') }}
),

batches as (
    select batch_id from {{ ref('stg_registry__batches') }}
),

jobs as (
    select
        jobs.job_key, jobs.job_id, jobs.batch_id, jobs.phase, jobs.scheduler, aliases.held_from, aliases.held_until
    from {{ ref('int_jobs_attributed') }} as jobs
    inner join {{ ref('int_job_aliases_resolved') }} as aliases
        on jobs.job_key = aliases.job_key
        and jobs.job_id = aliases.alias_job_id
),

job_matches as (
    select
        charges.source_file,
        charges.source_line,
        count(distinct jobs.job_key) as matched_jobs,
        min(jobs.job_key) as job_key
    from charges
    inner join jobs
        on (
            charges.resource_id = jobs.job_id
            or (
                jobs.scheduler = 'kubernetes'
                and charges.resource_id like {{ dbt.concat(["'%/'", "jobs.job_id"]) }}
            )
        )
        and {{ held_by_alias('jobs', 'charges.charge_period_start') }}
    group by charges.source_file, charges.source_line
),

resolved as (
    select
        charges.*,
        tagged.batch_id as tagged_batch_id,
        coalesce(job_matches.matched_jobs, 0) as matched_jobs,
        case when job_matches.matched_jobs = 1 then jobs.job_key end as job_key,
        case when job_matches.matched_jobs = 1 then jobs.job_id end as job_id,
        case when job_matches.matched_jobs = 1 then jobs.phase end as job_phase,
        case when job_matches.matched_jobs = 1 then jobs.batch_id end as job_batch_id
    from charges
    left join batches as tagged on {{ same_id('charges.batch_id') }} = {{ same_id('tagged.batch_id') }}
    left join job_matches
        on charges.source_file = job_matches.source_file
        and charges.source_line = job_matches.source_line
    left join jobs on job_matches.job_key = jobs.job_key
),

attributed as (
    select
        source_file,
        source_line,
        billing_account_id,
        cast({{ dbt.date_trunc('month', 'charge_period_start') }} as date) as month_start,
        cast({{ dbt.date_trunc('month', 'coalesce(billing_period_start, charge_period_start)') }} as date)
            as billing_month,
        charge_period_start,
        charge_period_end,
        charge_category,
        charge_class,
        charge_class = 'Correction' as is_correction,
        -- Compute, or Storage (a checkpoint volume the bill names by its job): a job's bill is its compute lines only.
        {{ is_cloud_compute('service_category') }} as is_compute,
        invoice_id,
        provider_name,
        publisher_name,
        invoice_issuer_name,
        billing_currency,
        resource_id,
        service_name,
        service_category,
        sku_id,
        consumed_quantity,
        consumed_unit,
        billed_cost,
        effective_cost,
        list_cost,
        coalesce(job_batch_id, tagged_batch_id, 'unattributed') as batch_id,
        case
            when job_batch_id is not null then 'resource_job'
            when tagged_batch_id is not null then 'tag'
            else 'none'
        end as attribution,
        case
            when job_batch_id = 'unattributed' then 'job_not_in_a_registered_batch'
            when job_batch_id is not null or tagged_batch_id is not null then null
            when batch_id is not null then 'batch_not_registered'
            when matched_jobs > 1 then 'ambiguous_resource_match'
            else 'no_batch_tag_or_job_match'
        end as unattributed_reason,
        coalesce(job_batch_id is not null and batch_id is not null and batch_id <> job_batch_id, false)
            as tag_disagrees,
        job_key,
        job_id,
        job_phase as phase
    from resolved
)

select
    attributed.*,
    -- Each line in whole cents (FOCUS amounts carry up to 18 decimals), by cumulative rounding over its invoice (a
    -- billing account's billing period, in its currency): the invoice's lines add up to its exact sum rounded once,
    -- as the provider bills it. Rounded per resource instead, twenty S3 buckets at 0.005 each (0.10 billed) made 20
    -- cents, and at 0.004 each none. The lines are taken in a stable order of what the books group them by (the
    -- month charged, batch, job, service, resource, whether invoiced, whether a correction), so each such group is a
    -- run of lines holding its exact sum within a cent; every book sums these cents, so the cash book, the cost lines
    -- and journal, the jobs' bills, the resource book and the FOCUS export agree to the cent.
    {{ cumulative_cents('billed_cost', invoice, book_order) }} as billed_cost_cents,
    {{ cumulative_cents('effective_cost', invoice, book_order) }} as effective_cost_cents,
    {{ cumulative_cents('list_cost', invoice, book_order) }} as list_cost_cents
from attributed
