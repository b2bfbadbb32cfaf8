-- What the batch's compute would have cost at the organisation's best observed effective utilization (R24), at
-- the bill's own price, so the figure adds up against the bill. Effective utilization is effective-compute
-- GPU-hours over observed GPU-hours (occupied minus unobserved: time no device sample stands for). The best is the
-- highest among registered batches with observed time (ties: the first batch_id). At the best utilization the
-- batch's effective work would have occupied effective / best observed GPU-hours; its unobserved time is kept as it
-- was (nothing says how it was used), so
--   compute_cost_at_best_utilization = compute_cost x (unobserved + effective / best) / occupied,
-- rounded once to the cent. A batch without observed time has no utilization and no what-if figure.
-- Owned vs cloud: the batch's GPU-hours on owned capacity priced at the cloud's price per GPU-hour for the same GPU
-- (the contract's owned_vs_cloud.cloud_gpu_sku): per month, the SKU's FOCUS usage lines' EffectiveCost over their
-- ConsumedQuantity x gpus_per_unit (corrections included; a line without a quantity prices nothing); the batch's cloud figure is the sum over its months of
-- owned GPU-hours x that price, rounded once to the cent, and null when a month with owned hours has no such
-- line (cloud_unpriced_gpu_hours says how many).
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

cloud_skus as (
    select contract_version, code as sku_id, lower_bound as gpus_per_unit
    from {{ ref('stg_contract__enumerations') }}
    where enumeration = 'cloud_gpu_sku'
),

cloud_prices as (
    select
        cloud_skus.contract_version,
        charges.month_start,
        cast(sum(charges.effective_cost) as double)
        / sum(charges.consumed_quantity * cloud_skus.gpus_per_unit) as cloud_price_per_gpu_hour
    from {{ ref('int_focus_charges_attributed') }} as charges
    inner join cloud_skus on charges.sku_id = cloud_skus.sku_id
    where charges.charge_category = 'Usage' and charges.consumed_quantity is not null
    group by cloud_skus.contract_version, charges.month_start
    having sum(charges.consumed_quantity * cloud_skus.gpus_per_unit) > 0
),

owned_months as (
    select
        batch_id,
        month_start,
        sum(occupied_gpu_seconds) as gpu_seconds,
        sum(compute_cost) as compute_cost,
        count(*) - count(compute_cost) as unpriced_job_months
    from {{ ref('int_job_months_costed') }}
    where cost_source = 'owned_capacity'
    group by batch_id, month_start
),

owned_vs_cloud as (
    select
        owned_months.batch_id,
        max(cloud_skus.sku_id) as cloud_gpu_sku,
        sum(owned_months.gpu_seconds) / 3600.0 as owned_gpu_hours,
        case when sum(owned_months.unpriced_job_months) = 0 then sum(owned_months.compute_cost) end
            as owned_compute_cost,
        sum(case when cloud_prices.cloud_price_per_gpu_hour is null then owned_months.gpu_seconds else 0 end)
            / 3600.0 as cloud_unpriced_gpu_hours,
        case when count(cloud_prices.cloud_price_per_gpu_hour) = count(*) then round(
            sum(owned_months.gpu_seconds * cloud_prices.cloud_price_per_gpu_hour) / 3600.0, 2) end
            as cloud_cost_of_owned_gpu_hours
    from owned_months
    inner join compute on owned_months.batch_id = compute.batch_id
    left join cloud_skus on compute.contract_version = cloud_skus.contract_version
    left join cloud_prices
        on compute.contract_version = cloud_prices.contract_version
        and owned_months.month_start = cloud_prices.month_start
    group by owned_months.batch_id
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
    priced.batch_id,
    priced.contract_version,
    cast(occupied_gpu_hours as decimal(18, 4)) as occupied_gpu_hours,
    cast(observed_gpu_hours as decimal(18, 4)) as observed_gpu_hours,
    cast(effective_compute_gpu_hours as decimal(18, 4)) as effective_compute_gpu_hours,
    cast(effective_utilization as decimal(18, 4)) as effective_utilization,
    best_batch_id,
    cast(best_effective_utilization as decimal(18, 4)) as best_effective_utilization,
    compute_cost,
    compute_cost_at_best_utilization,
    cast(compute_cost - compute_cost_at_best_utilization as decimal(18, 2)) as saving_at_best_utilization,
    owned_vs_cloud.cloud_gpu_sku,
    cast(coalesce(owned_vs_cloud.owned_gpu_hours, 0) as decimal(18, 4)) as owned_gpu_hours,
    -- A batch without owned GPU-hours owns nothing to price: 0.00 on both sides.
    cast(case when owned_vs_cloud.batch_id is null then 0 else owned_vs_cloud.owned_compute_cost end
        as decimal(18, 2)) as owned_compute_cost,
    cast(coalesce(owned_vs_cloud.cloud_unpriced_gpu_hours, 0) as decimal(18, 4)) as cloud_unpriced_gpu_hours,
    cast(case when owned_vs_cloud.batch_id is null then 0 else owned_vs_cloud.cloud_cost_of_owned_gpu_hours end
        as decimal(18, 2)) as cloud_cost_of_owned_gpu_hours,
    cast(case when owned_vs_cloud.batch_id is null then 0
        else owned_vs_cloud.owned_compute_cost - owned_vs_cloud.cloud_cost_of_owned_gpu_hours end
        as decimal(18, 2)) as owned_minus_cloud,
    {{ reporting_currency() }} as currency
from priced
left join owned_vs_cloud on priced.batch_id = owned_vs_cloud.batch_id
