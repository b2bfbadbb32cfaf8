-- Owned usage (training jobs + serving replicas) fits the GPU-hours the ledger's servers were available in the
-- month. A month over it (is_overbooked) means the procurement ledger is missing capacity or a job or replica
-- claims more GPUs than it held: the capacity cost is then spread over the usage, and no GPU-hour is idle. Each
-- such month is listed with its GPU-hours (a warning; the rows are kept in the audit schema); the job whose GPUs
-- exceed its nodes fails jobs_fit_on_their_nodes.
{{ config(severity='warn', store_failures=true, schema='audit') }}

select
    month,
    available_gpu_hours,
    training_gpu_hours,
    serving_gpu_hours,
    training_gpu_hours + serving_gpu_hours - available_gpu_hours as overbooked_gpu_hours
from {{ ref('fct_capacity_reconciliation') }}
where is_overbooked
