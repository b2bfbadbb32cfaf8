-- A job's avoidable categories (int_job_savings_split) never cost more than the job: they share its avoidable amount,
-- rounded once and capped at its compute cost. Returns each job whose categories add up to more.
select
    job_key,
    compute_cost,
    avoidable_rerun_cost + over_requested_cost + discarded_steps_cost + idle_cost + comm_wait_excess_cost
        as categories_cost
from {{ ref('int_job_savings_split') }}
where avoidable_rerun_cost + over_requested_cost + discarded_steps_cost + idle_cost + comm_wait_excess_cost
    > compute_cost
