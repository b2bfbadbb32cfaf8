{#- The utilization-tier rule (R5) for one device sample: the precedence of the tier it takes, from the contract's
    thresholds and tier precedences (columns of the row). Each tier's condition, with the thresholds of the
    sample's contract version; idle always holds. A condition that does not hold (or cannot be told, a null
    metric) counts as idle. -#}
{% macro sample_tier_precedence() %}
    least(
        case when nvlink_bytes_per_second >= comm_min_nvlink and tensor_active < comm_max_tensor
            then comm_wait_precedence else idle_precedence end,
        case when gr_engine_active >= effective_min_gr
            then effective_compute_precedence else idle_precedence end,
        idle_precedence
    )
{% endmacro %}

{#- The CTEs the tier rule reads, one row per contract version: `parameters` (the thresholds, the nominal sample
    interval and the gap cap), `tiers` (each tier's precedence) and `tier_precedence` (the three as columns).
    Ends with a comma: the model's next CTE follows. -#}
{% macro tier_rule_ctes() %}
parameters as (
    {{ contract_parameters({
        'sample_interval_seconds': 'interval_seconds',
        'max_gap_factor': 'max_gap_factor',
        'comm_wait_min_nvlink_bytes_per_second': 'comm_min_nvlink',
        'comm_wait_max_tensor_active': 'comm_max_tensor',
        'effective_min_gr_engine_active': 'effective_min_gr',
        'energy_max_gpu_power_watts': 'max_gpu_watts',
    }) }}
),

-- The tiers a sample can take (unobserved, which no sample takes, has no precedence).
tiers as (
    select contract_version, code as tier, lower_bound as precedence
    from {{ ref('stg_contract__enumerations') }}
    where enumeration = 'utilization_tier' and lower_bound is not null
),

tier_precedence as (
    select
        contract_version,
        max(case when tier = 'comm_wait' then precedence end) as comm_wait_precedence,
        max(case when tier = 'effective_compute' then precedence end) as effective_compute_precedence,
        max(case when tier = 'idle' then precedence end) as idle_precedence
    from tiers
    group by contract_version
),
{% endmacro %}
