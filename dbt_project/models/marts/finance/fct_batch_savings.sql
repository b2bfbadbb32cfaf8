-- Where the money could have been saved (R24), one row per registered batch and avoidable category, ranked by
-- amount within the batch, with the lever that would recover it. Amounts use the bill's own prices, so they add up
-- against it: the five compute categories (int_job_savings_split) are parts of the batch's compute cost that never
-- overlap; storage past retention or duplicated is part of its storage cost (fct_storage_governance: a past-retention
-- object whole, a duplicate every copy but the oldest of its ETag that month, an object counted once). Queueing on
-- owned capacity is not on the batch's bill (owned GPUs cost nothing until allocated): it is the queued GPU-hours
-- (requested GPUs x eligible, else submit, to start; int_job_waiting_measured) of the jobs that started on owned
-- capacity, each month's hours at that month's internal price per available GPU-hour (a queue across a month end is
-- split there), the capacity the organisation paid for while the batch waited, and on_batch_bill is false. A
-- requeued job's wait is preemption recovery, not queueing. A batch with a job that queued on owned capacity with
-- requested GPUs not known (a sacct export without ReqTRES, issue 10) has a null queueing amount and GPU-hours
-- (not known), ranked last, never the sum of its other jobs' queues. None of it is confidential.
with batches as (
    select batch_id, contract_version from {{ ref('stg_registry__batches') }}
),

jobs as (
    select * from {{ ref('int_job_savings_split') }}
),

compute_categories as (
    {%- for category in ['avoidable_rerun', 'over_requested', 'discarded_steps', 'idle', 'comm_wait_excess'] %}
    select
        batch_id,
        '{{ category }}' as category,
        sum({{ category }}_gpu_seconds) / 3600.0 as gpu_hours,
        sum({{ category }}_cost) as amount,
        false as is_unknown
    from jobs
    group by batch_id
    {%- if not loop.last %}

    union all
    {% endif %}
    {%- endfor %}
),

owned_jobs as (
    select distinct job_key, month_start from {{ ref('int_job_months_costed') }}
    where cost_source = 'owned_capacity'
),

queued_jobs as (
    select
        waiting.batch_id,
        waiting.queued_from_at,
        waiting.start_at,
        waiting.requested_gpu_equivalents,
        waiting.array_tasks
    from {{ ref('int_job_waiting_measured') }} as waiting
    inner join owned_jobs
        on waiting.job_key = owned_jobs.job_key
        and {{ dbt.date_trunc('month', 'waiting.start_at') }} = owned_jobs.month_start
    -- A job that queued with requested GPUs not known (an export without ReqTRES) is kept: its queue is unknown.
    where waiting.queued_gpu_seconds > 0 or (waiting.queued_seconds > 0 and waiting.queued_gpu_seconds is null)
),

queue_months as (
    {{ months_run('queued_jobs', 'queued_from_at', 'start_at') }}
),

queue_month_bounds as (
    {{ month_bounds('queue_months') }}
),

-- Each month's part of a queue, at that month's price.
queued as (
    select
        queued_jobs.batch_id,
        {{ seconds_between(
            'greatest(queued_jobs.queued_from_at, queue_month_bounds.month_from)',
            'least(queued_jobs.start_at, queue_month_bounds.month_until)') }}
            * queued_jobs.requested_gpu_equivalents * queued_jobs.array_tasks as queued_gpu_seconds,
        prices.price_per_available_gpu_hour
    from queued_jobs
    inner join queue_month_bounds
        on queued_jobs.queued_from_at < queue_month_bounds.month_until
        and queued_jobs.start_at > queue_month_bounds.month_from
    left join {{ ref('int_gpu_hour_prices_derived') }} as prices
        on queue_month_bounds.month_start = prices.month_start
),

-- A batch with a job whose queue's GPUs are not known has no known queueing amount: null, never the others' sum.
queueing as (
    select
        batch_id,
        'queueing_on_owned_capacity' as category,
        sum(queued_gpu_seconds) / 3600.0 as gpu_hours,
        cast(round(sum(queued_gpu_seconds * price_per_available_gpu_hour / 3600.0), 2) as decimal(18, 2)) as amount,
        count(*) > count(queued_gpu_seconds) as is_unknown
    from queued
    group by batch_id
),

storage_objects as (
    select
        month_start,
        bucket,
        object_key,
        version_id,
        batch_id,
        etag,
        last_modified_at,
        monthly_cost,
        is_unpriced,
        max(case when finding = 'past_retention' then 1 else 0 end) as is_past_retention,
        max(case when finding = 'duplicate' then 1 else 0 end) as is_duplicate
    from {{ ref('fct_storage_governance') }}
    where finding in ('past_retention', 'duplicate')
    group by month_start, bucket, object_key, version_id, batch_id, etag, last_modified_at, monthly_cost, is_unpriced
),

storage_ranked as (
    select
        storage_objects.*,
        row_number() over (
            partition by month_start, etag order by last_modified_at, bucket, object_key
        ) as copy_number
    from storage_objects
),

storage as (
    select
        batch_id,
        'storage_past_retention_or_duplicated' as category,
        cast(null as double) as gpu_hours,
        sum(monthly_cost) as amount,
        false as is_unknown
    from storage_ranked
    -- An unpriced copy is ranked too (the first copy may have no price) but adds no amount.
    where not is_unpriced and (is_past_retention = 1 or (is_duplicate = 1 and copy_number > 1))
    group by batch_id
),

categories as (
    select
        'idle' as category,
        'Release or shrink allocations that sit idle; fix input pipelines that starve the GPUs' as lever,
        true as on_batch_bill,
        1 as category_order

    union all

    select
        'comm_wait_excess' as category,
        'Bring communication wait down to the phase median: placement, topology, overlap' as lever,
        true as on_batch_bill,
        2 as category_order

    union all

    select
        'avoidable_rerun' as category,
        'Check submissions, configuration and data before launch (review class avoidable_rework)' as lever,
        true as on_batch_bill,
        3 as category_order

    union all

    select
        'discarded_steps' as category,
        'Validate data and reward before training on it; checkpoint before risky changes' as lever,
        true as on_batch_bill,
        4 as category_order

    union all

    select
        'over_requested' as category,
        'Request only the GPUs the job uses' as lever,
        true as on_batch_bill,
        5 as category_order

    union all

    select
        'queueing_on_owned_capacity' as category,
        'Reserve owned capacity ahead or submit when the cluster is free' as lever,
        false as on_batch_bill,
        6 as category_order

    union all

    select
        'storage_past_retention_or_duplicated' as category,
        'Delete objects past retention and duplicate copies' as lever,
        true as on_batch_bill,
        7 as category_order
),

amounts as (
    select batch_id, category, gpu_hours, amount, is_unknown from compute_categories
    union all
    select batch_id, category, gpu_hours, amount, is_unknown from queueing
    union all
    select batch_id, category, gpu_hours, amount, is_unknown from storage
),

grid as (
    select
        batches.batch_id,
        batches.contract_version,
        categories.category,
        categories.lever,
        categories.on_batch_bill,
        categories.category_order,
        case when amounts.is_unknown then null else amounts.gpu_hours end as gpu_hours,
        case when amounts.is_unknown then null else coalesce(amounts.amount, 0) end as amount
    from batches
    cross join categories
    left join amounts on batches.batch_id = amounts.batch_id and categories.category = amounts.category
)

select
    batch_id,
    contract_version,
    category,
    cast(row_number() over (
        partition by batch_id order by case when amount is null then 1 else 0 end, amount desc, category_order asc
    ) as bigint) as savings_rank,
    cast(amount as decimal(18, 2)) as amount,
    cast(gpu_hours as decimal(18, 4)) as gpu_hours,
    on_batch_bill,
    lever,
    {{ reporting_currency() }} as currency
from grid
