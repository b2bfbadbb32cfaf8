{#- The columns of the compute bill (fct_batch_compute, fct_phase_compute) from the sums in `relation`, which has
    the columns of int_phase_compute_aggregated at the mart's grain: counts as bigint, GPU-seconds as GPU-hours
    (4 decimals), money to the cent, and what a counted step, a million counted tokens and an effective GPU-hour
    cost (4 decimals; null where there is nothing to divide by, or no price: is_unpriced; per counted step and
    token also null when a counted step's job is not in the scheduler export, counted_steps_without_job: the
    compute that made it is not known, and a unit cost without it would be too low). -#}
{% macro compute_bill_figures(relation) %}
    cast({{ relation }}.jobs as bigint) as jobs,
    cast({{ relation }}.running_jobs as bigint) as running_jobs,
    cast({{ relation }}.failed_jobs as bigint) as failed_jobs,
    cast({{ relation }}.rerun_jobs as bigint) as rerun_jobs,
    cast({{ relation }}.jobs_without_phase as bigint) as jobs_without_phase,
    cast({{ relation }}.jobs_without_time_limit as bigint) as jobs_without_time_limit,
    cast({{ relation }}.jobs_without_gpu_request as bigint) as jobs_without_gpu_request,
    {%- for figure in ['requested', 'occupied', 'effective_compute', 'comm_wait', 'idle', 'unobserved', 'failed',
                       'rerun'] %}
    cast({{ relation }}.{{ figure }}_gpu_seconds / 3600.0 as decimal(18, 4)) as {{ figure }}_gpu_hours,
    {%- endfor %}
    cast({{ relation }}.steps_run as bigint) as steps_run,
    cast({{ relation }}.steps_counted as bigint) as steps_counted,
    cast({{ relation }}.steps_discarded as bigint) as steps_discarded,
    cast({{ relation }}.steps_not_committed as bigint) as steps_not_committed,
    cast({{ relation }}.tokens_counted as bigint) as tokens_counted,
    cast({{ relation }}.step_seconds_median as decimal(18, 3)) as step_seconds_median,
    cast({{ relation }}.step_seconds_max as decimal(18, 3)) as step_seconds_max,
    {{ relation }}.step_max_number,
    cast({{ relation }}.compute_cost as decimal(18, 2)) as compute_cost,
    cast({{ relation }}.rerun_compute_cost as decimal(18, 2)) as rerun_compute_cost,
    case when {{ relation }}.steps_counted > 0 and {{ relation }}.counted_steps_without_job = 0
        then {{ cents_per_unit(relation ~ '.compute_cost * 100', relation ~ '.steps_counted', 4) }}
    end as cost_per_counted_step,
    case when {{ relation }}.tokens_counted > 0 and {{ relation }}.counted_steps_without_job = 0
        then {{ money_share(relation ~ '.compute_cost', '1000000', relation ~ '.tokens_counted', 4) }}
    end as cost_per_million_counted_tokens,
    case when {{ relation }}.effective_compute_gpu_seconds > 0
        then {{ money_share(relation ~ '.compute_cost', '3600', relation ~ '.effective_compute_gpu_seconds', 4) }}
    end as cost_per_effective_gpu_hour,
    {{ relation }}.unpriced_gpu_seconds > 0 as is_unpriced,
    cast({{ relation }}.unpriced_gpu_seconds / 3600.0 as decimal(18, 4)) as unpriced_gpu_hours
{%- endmacro %}
