{#- Models incremental by sample day (int_gpu_share_days): a night builds again only the days whose samples or jobs
    changed (issue 15: a night pays for the new day's files, not for history). What the last build was made from is
    kept beside the model (device_samples_state), as int_device_samples_inputs states it tonight. -#}

{#- The days ``model`` builds again (its code: device_samples_code), as ranges [first day, day after the last) in time order; none for every day: a
    full build, no kept inputs, inputs not built in this dbt invocation, or a changed contract or code. A day is built
    again when a file whose samples span it, or a job whose window holds part of it, is new, changed or gone (a job
    attributes the samples of its window). -#}
{% macro sample_days_to_build(model) -%}
    {%- if not execute or not is_incremental() -%}{{ return(none) }}{%- endif -%}
    {%- set state = load_relation(device_samples_state(model)) -%}
    {%- if state is none or not device_samples_inputs_fresh() -%}{{ return(none) }}{%- endif -%}
    {%- set code = device_samples_code([model]) -%}
    {%- set changed_query -%}
        with current_inputs as (
            select kind, item, fingerprint, span_start, span_end
            from {{ ref('int_device_samples_inputs') }}
            where kind <> 'code'
            union all
            select 'code' as kind, 'code' as item, '{{ code }}' as fingerprint, null as span_start, null as span_end
        ),

        built as (
            select kind, item, fingerprint, span_start, span_end from {{ state }}
        ),

        changed as (
            {{ changed_inputs('current_inputs', 'built') }}
        )

        select
            kind,
            cast({{ dbt.date_trunc('day', 'span_start') }} as date) as first_day,
            cast({{ dbt.date_trunc('day', 'span_end') }} as date) as last_day
        from changed
        group by 1, 2, 3
        order by 2, 3
    {%- endset -%}
    {%- set ranges = [] -%}
    {%- for row in run_query(changed_query).rows -%}
        {%- if row[0] not in ('file', 'job') or row[1] is none or row[2] is none -%}{{ return(none) }}{%- endif -%}
        {%- set after = row[2] + modules.datetime.timedelta(days=1) -%}
        {%- if ranges and row[1] <= ranges[-1][1] -%}
            {%- set last = ranges.pop() -%}
            {%- do ranges.append([last[0], [last[1], after] | max]) -%}
        {%- else -%}
            {%- do ranges.append([row[1], after]) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(ranges) }}
{%- endmacro %}

{#- A condition: ``column`` lies in one of ``ranges`` (sample_days_to_build), with the bounds as constants so that
    scans skip the other days; false for no range. -#}
{% macro sample_days_where(ranges, column) -%}
    {%- if ranges | length == 0 -%}
        1 = 0
    {%- else -%}
        ({%- for range in ranges %}{% if not loop.first %} or {% endif -%}
            ({{ column }} >= cast('{{ range[0] }}' as {{ dbt.type_timestamp() }})
            and {{ column }} < cast('{{ range[1] }}' as {{ dbt.type_timestamp() }}))
        {%- endfor %})
    {%- endif -%}
{%- endmacro %}

{#- ``sample_days_where`` for the days ``sample_days_to_build`` returned, or none (every day). -#}
{% macro sample_days_filter(ranges, column) -%}
    {{ return(none if ranges is none else sample_days_where(ranges, column)) }}
{%- endmacro %}

{#- Pre-hook: an incremental build deletes the rows of the days it builds again (every row for every day). -#}
{% macro sample_days_forget(model) -%}
    {%- if is_incremental() -%}
        {%- set days = sample_days_to_build(model) -%}
        delete from {{ this }}
        {%- if days is not none %} where {{ sample_days_where(days, 'sample_day') }}{% endif -%}
    {%- endif -%}
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

{#- The inputs (kind, span_start, span_end) of ``current`` not in ``built`` (new or changed: tonight's span) and of
    ``built`` not in ``current`` (changed or gone: the span they had), both relations of kind, item, fingerprint and
    span (int_device_samples_inputs, and the inputs kept beside a model). -#}
{% macro changed_inputs(current, built) %}
    select {{ current }}.kind, {{ current }}.span_start, {{ current }}.span_end
    from {{ current }}
    left join {{ built }}
        on {{ current }}.kind = {{ built }}.kind
        and {{ current }}.item = {{ built }}.item
        and {{ current }}.fingerprint = {{ built }}.fingerprint
    where {{ built }}.item is null
    union all
    select {{ built }}.kind, {{ built }}.span_start, {{ built }}.span_end
    from {{ built }}
    left join {{ current }}
        on {{ built }}.kind = {{ current }}.kind
        and {{ built }}.item = {{ current }}.item
        and {{ built }}.fingerprint = {{ current }}.fingerprint
    where {{ current }}.item is null
{% endmacro %}
