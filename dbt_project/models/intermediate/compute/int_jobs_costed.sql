-- One row per job: attribution, reasons, lineage, the three utilization tiers plus unobserved time, and cost.
-- A job with occupied time in a month without an internal GPU-hour price (no owned capacity in service) is
-- unpriced: its compute_cost is null, never a partial sum or 0.00, and unpriced_gpu_seconds says how much
-- time has no price.
with jobs as (
    select * from {{ ref('int_jobs_attributed') }}
),

utilization as (
    select * from {{ ref('int_job_utilization_tiered') }}
),

costs as (
    select
        job_key,
        cast(sum(compute_cost) as decimal(18, 2)) as compute_cost,
        max(case when is_unpriced then 1 else 0 end) as has_unpriced_month,
        sum(case when is_unpriced then occupied_gpu_seconds else 0 end) as unpriced_gpu_seconds
    from {{ ref('int_job_months_costed') }}
    group by job_key
),

joined as (
    select
        jobs.*,
        coalesce(utilization.samples, 0) as samples,
        coalesce(utilization.effective_compute_gpu_seconds, 0) as effective_compute_gpu_seconds,
        coalesce(utilization.comm_wait_gpu_seconds, 0) as comm_wait_gpu_seconds,
        coalesce(utilization.idle_gpu_seconds, 0) as idle_gpu_seconds,
        case when coalesce(costs.has_unpriced_month, 0) = 0
            then coalesce(costs.compute_cost, cast(0 as decimal(18, 2)))
        end as compute_cost,
        coalesce(costs.has_unpriced_month, 0) = 1 as has_unpriced_month,
        coalesce(costs.unpriced_gpu_seconds, 0) as unpriced_gpu_seconds
    from jobs
    left join utilization on jobs.job_key = utilization.job_key
    left join costs on jobs.job_key = costs.job_key
)

select
    *,
    case
        when occupied_gpu_seconds > effective_compute_gpu_seconds + comm_wait_gpu_seconds + idle_gpu_seconds
            then occupied_gpu_seconds - effective_compute_gpu_seconds - comm_wait_gpu_seconds - idle_gpu_seconds
        else 0
    end as unobserved_gpu_seconds
from joined
