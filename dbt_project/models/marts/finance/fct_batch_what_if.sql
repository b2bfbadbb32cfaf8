-- What the batch's compute would have cost at the organisation's best observed effective utilization (R24), at
-- the bill's own price, so the figure adds up against the bill. Effective utilization is effective-compute
-- GPU-hours over observed GPU-hours (occupied minus unobserved: time no device sample stands for). The best is the
-- highest among registered batches with observed time (ties: the first batch_id). At the best utilization the
-- batch's effective work would have occupied effective / best observed GPU-hours; its unobserved time is kept as it
-- was (nothing says how it was used), so
--   compute_cost_at_best_utilization = compute_cost x (unobserved + effective / best) / occupied,
-- rounded once to the cent. A batch without observed time has no utilization and no what-if figure.
with batches as (
    select batch_id from {{ ref('stg_registry__batches') }}
),

compute as (
    select
        compute.batch_id,
        compute.contract_version,
        compute.occupied_gpu_hours,
        compute.occupied_gpu_hours - compute.unobserved_gpu_hours as observed_gpu_hours,
        compute.unobserved_gpu_hours,
        compute.effective_compute_gpu_hours,
        compute.compute_cost
    from {{ ref('fct_batch_compute') }} as compute
    inner join batches on compute.batch_id = batches.batch_id
),

utilized as (
    select
        compute.*,
        case
            when observed_gpu_hours > 0 then 1.0 * effective_compute_gpu_hours / observed_gpu_hours
        end as effective_utilization
    from compute
),

best as (
    select
        batch_id as best_batch_id,
        effective_utilization as best_effective_utilization
    from (
        select
            batch_id,
            effective_utilization,
            row_number() over (order by effective_utilization desc, batch_id asc) as best_rank
        from utilized
        where effective_utilization > 0
    ) as ranked
    where best_rank = 1
),

priced as (
    select
        utilized.*,
        best.best_batch_id,
        best.best_effective_utilization,
        case
            when utilized.effective_utilization is not null and utilized.compute_cost is not null
                then cast(round(
                    utilized.compute_cost
                    * (utilized.unobserved_gpu_hours
                        + utilized.effective_compute_gpu_hours / best.best_effective_utilization)
                    / utilized.occupied_gpu_hours,
                    2
                ) as decimal(18, 2))
        end as compute_cost_at_best_utilization
    from utilized
    left join best on 1 = 1
)

select
    batch_id,
    contract_version,
    cast(occupied_gpu_hours as decimal(18, 4)) as occupied_gpu_hours,
    cast(observed_gpu_hours as decimal(18, 4)) as observed_gpu_hours,
    cast(effective_compute_gpu_hours as decimal(18, 4)) as effective_compute_gpu_hours,
    cast(effective_utilization as decimal(18, 4)) as effective_utilization,
    best_batch_id,
    cast(best_effective_utilization as decimal(18, 4)) as best_effective_utilization,
    compute_cost,
    compute_cost_at_best_utilization,
    cast(compute_cost - compute_cost_at_best_utilization as decimal(18, 2)) as saving_at_best_utilization,
    {{ reporting_currency() }} as currency
from priced
