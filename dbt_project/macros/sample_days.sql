{#- Models incremental by sample day (int_gpu_share_days): a night builds again only the days whose samples or jobs
    changed (issue 15: a night pays for the new day's files, not for history). What the last build was made from is
    kept beside the model (macros/incremental_periods.sql), as int_device_samples_inputs states it tonight. -#}

{#- The days ``model`` builds again (its code: device_samples_code), as ranges [first day, day after the last) in
    time order; none for every day (macros/incremental_periods.sql periods_to_build). A day is built again when a file
    whose samples span it, or a job whose window holds part of it, is new, changed or gone (a job attributes the
    samples of its window); every day when the contract or the code changed. -#}
{% macro sample_days_to_build(model) -%}
    {#- Not built incrementally: every day, the code not hashed (a unit test has no graph to hash it from). -#}
    {%- if not execute or not is_incremental() -%}{{ return(none) }}{%- endif -%}
    {{ return(periods_to_build(model, 'int_device_samples_inputs', device_samples_code([model]), 'day')) }}
{%- endmacro %}

{#- Pre-hook: an incremental build deletes the rows of the days it builds again (every row for every day). -#}
{% macro sample_days_forget(model) -%}
    {{ periods_forget(sample_days_to_build(model), 'sample_day') }}
{%- endmacro %}

{#- Closes the days of ``relation`` (incremental by sample day: int_gpu_share_days, int_unattributed_gpu_days): one row
    per day and ``partition_by`` (a GPU, or a GPU's instance), with the seconds its last sample of the day stands for,
    to its first sample of its next day with samples, capped at max_gap_factor x the nominal interval, or the nominal
    interval when none follows (last_instant_seconds); ``carried`` columns of the day come along. Reads the model's
    `parameters` CTE (interval_seconds, max_gap_factor by contract version); the newest contract version applies. -#}
{% macro close_sample_days(relation, partition_by, carried=[]) %}
    {%- set columns = partition_by + carried %}
    select
        closing.sample_day,
        {%- for column in columns %}
        closing.{{ column }},
        {%- endfor %}
        least(
            coalesce({{ seconds_between('closing.last_sampled_at', 'closing.next_sampled_at') }},
                parameters.interval_seconds),
            parameters.interval_seconds * parameters.max_gap_factor
        ) as last_instant_seconds
    from (
        select
            sample_day,
            {{ columns | join(', ') }},
            last_sampled_at,
            lead(first_sampled_at) over (partition by {{ partition_by | join(', ') }} order by sample_day)
                as next_sampled_at
        from (
            select distinct sample_day, {{ columns | join(', ') }}, first_sampled_at, last_sampled_at
            from {{ relation }}
        ) as sample_days
    ) as closing
    inner join parameters on parameters.contract_version = {{ latest_contract_version() }}
{% endmacro %}

{#- CTEs (after a ``with``) of int_unattributed_gpu_days' rows with the GPU time each stands for, closed
    (``closed_days``: every column of the model and ``gpu_seconds_closed``): a day's last sample stands for the time to
    its GPU's first unattributed sample of its next day (close_sample_days). Read by fct_unattributed_gpu_hours and by
    the warn test jobs_allocated_no_gpu_beside_gpu_work, so both count GPU time no job claims alike. -#}
{% macro unattributed_days_closed() %}
    {%- set gpu = ['cluster', 'hostname', 'gpu_index', 'gpu_instance_id'] %}
parameters as (
    {{ contract_parameters({
        'sample_interval_seconds': 'interval_seconds',
        'max_gap_factor': 'max_gap_factor'}) }}
),

days as (
    select * from {{ ref('int_unattributed_gpu_days') }}
),

-- Each GPU-day's last sample stands for the time to the GPU's first unattributed sample of its next day.
gpu_days as (
    {{ close_sample_days('days', gpu) }}
),

closed_days as (
    select
        days.*,
        days.gpu_seconds + days.last_sample_share * gpu_days.last_instant_seconds as gpu_seconds_closed
    from days
    inner join gpu_days
        on {{ same_gpu_day('days', 'gpu_days', instance=true) }}
)
{%- endmacro %}

{#- The join condition of ``left``'s and ``right``'s rows of one GPU-day: the day, the cluster (none the same as none),
    the host and the GPU; with ``instance``, the same MIG instance too (or neither on one). -#}
{% macro same_gpu_day(left, right, instance=false) -%}
    {{ left }}.sample_day = {{ right }}.sample_day
    and {{ left }}.cluster is not distinct from {{ right }}.cluster
    and {{ left }}.hostname = {{ right }}.hostname
    and {{ left }}.gpu_index = {{ right }}.gpu_index
    {%- if instance %}
    and (
        {{ left }}.gpu_instance_id = {{ right }}.gpu_instance_id
        or ({{ left }}.gpu_instance_id is null and {{ right }}.gpu_instance_id is null)
    )
    {%- endif %}
{%- endmacro %}

