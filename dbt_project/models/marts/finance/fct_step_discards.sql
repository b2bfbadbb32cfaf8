-- Discarded training steps per batch, phase and discard reason (R7).
select
    batch_id,
    phase,
    discarded_reason,
    count(*) as steps_discarded,
    cast(sum(coalesce(tokens, 0)) as bigint) as tokens_discarded
from {{ ref('int_training_steps_attributed') }}
where discarded_reason is not null
group by batch_id, phase, discarded_reason
