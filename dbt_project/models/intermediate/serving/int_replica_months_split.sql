-- Each serving replica's GPU time split over the calendar months it ran in (every month from its start to its end),
-- with its agreed GPU-hour price (null: the replica runs on owned GPUs at the internal price).
with replicas as (
    select * from {{ ref('stg_serving__replicas') }}
),

months as (
    {{ months_run('replicas', 'started_at', 'ended_at') }}
),

month_bounds as (
    {{ month_bounds('months') }}
)

select
    month_bounds.month_start,
    replicas.replica_key,
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
