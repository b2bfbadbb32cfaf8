-- Each serving replica's GPU time split over the calendar months it ran in, with its agreed GPU-hour price
-- (null: the replica runs on owned GPUs at the internal price).
with replicas as (
    select * from {{ ref('stg_serving__replicas') }}
),

months as (
    select cast({{ dbt.date_trunc('month', 'started_at') }} as date) as month_start from replicas
    union
    select cast({{ dbt.date_trunc('month', 'ended_at') }} as date) from replicas
),

month_bounds as (
    {{ month_bounds('months') }}
)

select
    month_bounds.month_start,
    replicas.replica_id,
    replicas.model,
    cast(replicas.gpus * {{ seconds_between(
        'greatest(replicas.started_at, month_bounds.month_from)',
        'least(replicas.ended_at, month_bounds.month_until)') }} as bigint) as gpu_seconds,
    replicas.gpu_hour_price is null as uses_internal_price,
    replicas.gpu_hour_price as agreed_gpu_hour_price
from replicas
inner join month_bounds
    on replicas.started_at < month_bounds.month_until
    and replicas.ended_at > month_bounds.month_from
