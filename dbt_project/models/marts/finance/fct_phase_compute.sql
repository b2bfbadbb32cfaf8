-- The compute bill per batch and phase (R2, R4-R7): the sums of int_phase_compute_aggregated as the bill's figures
-- (macros/compute_bill_figures.sql: GPU-hours, money to the cent, per-unit costs), with the batch's contract version.
with phases as (
    select * from {{ ref('int_phase_compute_aggregated') }}
),

batches as (
    select batch_id, contract_version from {{ ref('dim_batches') }}
)

select
    phases.batch_id,
    phases.phase,
    batches.contract_version,
    {{ compute_bill_figures('phases') }},
    {{ reporting_currency() }} as currency
from phases
left join batches on phases.batch_id = batches.batch_id
