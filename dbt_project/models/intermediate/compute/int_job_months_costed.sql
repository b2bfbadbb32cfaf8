-- Each job's cost per calendar month. A job on owned GPUs takes its largest-remainder share of the month's
-- capacity cost (int_capacity_costs_allocated: the job-months, serving replicas and idle capacity of a month sum to
-- its capacity cost to the cent); a job a FOCUS line names by ResourceId costs what the bill says (EffectiveCost of
-- its lines in the charge month, in the lines' whole cents: int_focus_charges_attributed), its compute lines only:
-- a Storage line that names the job (a checkpoint volume) is storage, as in int_cost_lines_unioned. A job on a
-- rented cluster (int_job_months_split.is_cloud) that no line bills yet is pending: its GPU-seconds with a null
-- compute_cost and is_unpriced, never owned capacity's price and never 0.00.
with job_months as (
    select * from {{ ref('int_job_months_split') }}
),

allocation as (
    select month_start, part_id as job_key, allocated_cents
    from {{ ref('int_capacity_costs_allocated') }}
    where part_kind = 'training_job'
),

prices as (
    select month_start, price_per_available_gpu_hour from {{ ref('int_gpu_hour_prices_derived') }}
),

cloud_charges as (
    select
        job_key,
        month_start,
        cast(sum(effective_cost_cents) / 100.0 as decimal(18, 2)) as compute_cost,
        -- A line without ListCost leaves the job-month's list cost unknown, not the sum of the others (its
        -- contract discount would be a partial one).
        cast({{ sum_when_known('list_cost_cents') }} / 100.0 as decimal(18, 2)) as list_cost
    from {{ ref('int_focus_charges_attributed') }}
    where job_key is not null and {{ is_cloud_compute('service_category') }}
    group by job_key, month_start
),

owned as (
    select
        job_months.job_key,
        job_months.job_id,
        job_months.batch_id,
        job_months.phase,
        job_months.month_start,
        'owned_capacity' as cost_source,
        job_months.occupied_gpu_seconds,
        prices.price_per_available_gpu_hour,
        cast(allocation.allocated_cents / 100.0 as decimal(18, 2)) as compute_cost,
        cast(null as decimal(18, 2)) as list_cost,
        allocation.job_key is null as is_unpriced
    from job_months
    left join allocation
        on job_months.job_key = allocation.job_key
        and job_months.month_start = allocation.month_start
    left join prices on job_months.month_start = prices.month_start
    where not job_months.is_cloud
),

-- A cloud job's occupied time is placed in the months it ran; its bill in the months charged.
billed_jobs as (
    select distinct job_key from cloud_charges
),

cloud_keys as (
    select job_key, month_start from job_months where is_cloud
    union
    select job_key, month_start from cloud_charges
),

cloud as (
    select
        cloud_keys.job_key,
        jobs.job_id,
        jobs.batch_id,
        jobs.phase,
        cloud_keys.month_start,
        'cloud_bill' as cost_source,
        coalesce(job_months.occupied_gpu_seconds, 0) as occupied_gpu_seconds,
        cast(null as double) as price_per_available_gpu_hour,
        -- A month of a billed job without a line of its own (run in October, billed in November) is 0.00 here.
        case when billed_jobs.job_key is not null
            then coalesce(cloud_charges.compute_cost, cast(0 as decimal(18, 2))) end as compute_cost,
        cloud_charges.list_cost,
        billed_jobs.job_key is null as is_unpriced
    from cloud_keys
    inner join {{ ref('int_jobs_attributed') }} as jobs on cloud_keys.job_key = jobs.job_key
    left join job_months
        on cloud_keys.job_key = job_months.job_key
        and cloud_keys.month_start = job_months.month_start
    left join cloud_charges
        on cloud_keys.job_key = cloud_charges.job_key
        and cloud_keys.month_start = cloud_charges.month_start
    left join billed_jobs on cloud_keys.job_key = billed_jobs.job_key
)

select * from owned
union all
select * from cloud
