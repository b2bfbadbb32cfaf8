-- Discarded training steps per batch, phase and discard reason (R7).
with batches as (
    select batch_id, contract_version from {{ ref('dim_batches') }}
)

select
    steps.batch_id,
    steps.phase,
    steps.discarded_reason,
    max(batches.contract_version) as contract_version,
    count(*) as steps_discarded,
    cast(sum(coalesce(steps.tokens, 0)) as bigint) as tokens_discarded
from {{ ref('int_training_steps_attributed') }} as steps
left join batches on steps.batch_id = batches.batch_id
where steps.discarded_reason is not null
group by steps.batch_id, steps.phase, steps.discarded_reason
