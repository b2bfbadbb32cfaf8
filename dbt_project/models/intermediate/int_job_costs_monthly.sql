-- Each job's occupied GPU-hours split over the calendar months it ran in, priced at that month's internal
-- GPU-hour price (R8). Money is rounded once, to the cent, per job and month; every total above is a sum
-- of these exact amounts.
with jobs as (
    select
        job_id,
        batch_id,
        phase,
        start_at,
        end_at,
        occupied_gpu_seconds,
        {{ seconds_between('start_at', 'end_at') }} as span_seconds
    from {{ ref('int_jobs_attributed') }}
    where start_at is not null and end_at is not null and occupied_gpu_seconds > 0
),

prices as (
    select
        month_start,
        cast(month_start as {{ dbt.type_timestamp() }}) as month_from,
        cast({{ dbt.dateadd('month', 1, 'month_start') }} as {{ dbt.type_timestamp() }}) as month_until,
        price_per_available_gpu_hour
    from {{ ref('int_gpu_hour_prices_monthly') }}
),

job_month_overlaps as (
    select
        jobs.job_id,
        jobs.batch_id,
        jobs.phase,
        prices.month_start,
        prices.price_per_available_gpu_hour,
        jobs.occupied_gpu_seconds,
        jobs.span_seconds,
        {{ seconds_between(
            'greatest(jobs.start_at, prices.month_from)',
            'least(jobs.end_at, prices.month_until)') }} as overlap_seconds
    from jobs
    inner join prices
        on jobs.start_at < prices.month_until
        and jobs.end_at > prices.month_from
),

-- A job whose occupation has gaps (a requeued Kubernetes job) is spread over its span in proportion.
monthly as (
    select
        job_id,
        batch_id,
        phase,
        month_start,
        price_per_available_gpu_hour,
        case when span_seconds = overlap_seconds then occupied_gpu_seconds
            else round(occupied_gpu_seconds * 1.0 * overlap_seconds / span_seconds, 0) end as occupied_gpu_seconds
    from job_month_overlaps
    where overlap_seconds > 0
)

select
    job_id,
    batch_id,
    phase,
    month_start,
    occupied_gpu_seconds,
    price_per_available_gpu_hour,
    cast(round(occupied_gpu_seconds * price_per_available_gpu_hour / 3600.0, 2) as decimal(18, 2)) as compute_cost,
    price_per_available_gpu_hour is null as is_unpriced
from monthly
