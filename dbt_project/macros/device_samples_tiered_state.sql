{#- int_device_samples_tiered is built again only for the jobs whose inputs changed (issue 15: a night pays for the new
    day's files, not for history). int_device_samples_inputs says what it is built from and which jobs' rows are
    built again; these macros keep, beside the table, what the last build was made from. -#}

{#- Where the inputs of the last build of int_device_samples_tiered are kept: a table beside it, written by its
    post-hook in the same transaction as its rows. -#}
{% macro device_samples_tiered_state() -%}
    {{ return(kept_inputs('int_device_samples_tiered')) }}
{%- endmacro %}

{#- The code int_device_samples_tiered's rows follow: its own, int_device_samples_attributed's and
    stg_telemetry__device_samples' SQL, and the macros they call, rendered; and int_device_samples_inputs' SQL, the
    rules that decide what is built again (a fix to them builds every job once). Another text builds every job again.
    tests/test_device_samples_incremental.py checks that every macro of the project the models call is rendered. -#}
{% macro device_samples_tiered_code() -%}
    {{ return(device_samples_code(['int_device_samples_tiered'])) }}
{%- endmacro %}

{#- The code ``models``' rows follow (see device_samples_tiered_code), as one hash: their SQL, the attribution view's,
    the staging view's and the inputs model's, every macro they call, rendered, and the macros that decide what is
    built again, as written. -#}
{% macro device_samples_code(models) -%}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set texts = [] -%}
    {%- set names = models + ['int_device_samples_attributed', 'stg_telemetry__device_samples', 'int_device_samples_inputs'] -%}
    {%- for name in names -%}
        {%- do texts.append(graph.nodes['model.cost_pipeline.' ~ name].raw_code) -%}
    {%- endfor -%}
    {%- do texts.append(tier_rule_ctes()) -%}
    {%- do texts.append(mig_slice_totals()) -%}
    {%- do texts.append(join_slice_totals('version', 'profile')) -%}
    {%- do texts.append(gpu_share('profile')) -%}
    {%- do texts.append(total_slices_of()) -%}
    {%- do texts.append(latest_contract_version()) -%}
    {%- do texts.append(sample_tier_precedence()) -%}
    {%- do texts.append(seconds_between('start_at', 'end_at')) -%}
    {%- do texts.append(contract_parameters({'parameter': 'column'})) -%}
    {%- do texts.append(expand_hostlist('relation', ['key'], 'hostlist')) -%}
    {%- do texts.append(held_by_alias('aliases', 'at')) -%}
    {%- do texts.append(held_by_alias_in_cluster('aliases', 'at')) -%}
    {%- do texts.append(indexed_job_name('label')) -%}
    {%- do texts.append(periods_where([], 'at')) -%}
    {%- do texts.append(same_gpu_day('a', 'b', true)) -%}
    {%- do texts.append(file_inputs('files', 'spans', 'built')) -%}
    {%- do texts.append(built_inputs(none)) -%}
    {%- do texts.append(delivered_columns('samples')) -%}
    {%- do texts.append(delivered_again_matches('samples')) -%}
    {%- do texts.append(mixed_gpus('relation', 'condition')) -%}
    {%- do texts.append(gpu_clusters('relation', 'condition', true)) -%}
    {%- do texts.append(join_gpu_clusters('samples', 'job', true)) -%}
    {%- do texts.append(mixed_gpus('relation')) -%}
    {%- do texts.append(gpu_clusters('relation', none, true, false)) -%}
    {%- do texts.append(join_gpu_clusters('samples', none, true)) -%}
    {%- do texts.append(join_gpu_clusters('samples', none, true, 'clusters')) -%}
    {%- do texts.append(unnamed_clusters('held')) -%}
    {%- do texts.append(sample_key('samples')) -%}
    {%- do texts.append(sample_key_matches('samples', 'keys')) -%}
    {%- do texts.append(readings_differ('a', 'b')) -%}
    {%- do texts.append(unnamed_copies('relation')) -%}
    {%- do texts.append(unnamed_copies('relation', true)) -%}
    {%- do texts.append(copy_verdicts('relation', 'unnamed', 'condition')) -%}
    {%- do texts.append(copy_verdicts('relation', 'unnamed')) -%}
    {%- do texts.append(join_copy_verdicts('samples')) -%}
    {%- do texts.append(delivered_again_gpus()) -%}
    {%- do texts.append(resolved_cluster('copies', ['candidate'], 'other')) -%}
    {%- do texts.append(namesake_clusters('relation', 'unnamed condition', 'named condition')) -%}
    {%- do texts.append(host_chunk_filter('hostname')) -%}
    {%- do texts.append(short_host('hostname')) -%}
    {#- The rules that decide what is built again, as written: a fix to them builds every job and day once. -#}
    {%- set rules = [
        sample_days_to_build, sample_days_forget, periods_to_build, periods_forget, next_period, inputs_fresh,
        device_samples_tiered_forget, remember_inputs, changed_inputs, device_samples_tiered_window, periods_filter,
        host_chunks_begin, host_chunk_set, host_chunks_rest,
    ] -%}
    {{- return(code_fingerprint(texts, rules)) -}}
{%- endmacro %}

{#- Pre-hook: an incremental run deletes every row but those of the jobs kept as built (a job built again, or gone,
    loses its rows; the model's select adds the rebuilt jobs' rows); every row when the inputs are not this run's. -#}
{% macro device_samples_tiered_forget() -%}
    {%- if is_incremental() -%}
        delete from {{ this }}
        {%- if inputs_fresh('int_device_samples_inputs') %}
        where job_key not in (
            select item from {{ ref('int_device_samples_inputs') }} where kind = 'job' and not rebuild
        )
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

{#- The samples an incremental build of int_device_samples_tiered reads: ``column`` (their time) within the span of the
    jobs it builds again, the bounds as constants so that scans skip the other days; ``1 = 0`` when it builds none;
    none for a full build (every sample). -#}
{% macro device_samples_tiered_window(column) -%}
    {%- if not execute or not (is_incremental() and inputs_fresh('int_device_samples_inputs')) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set window = run_query(
        'select min(span_start), max(span_end) from ' ~ ref('int_device_samples_inputs')
        ~ " where kind = 'job' and rebuild"
    ).rows[0] -%}
    {%- if window[0] is none -%}{{ return('1 = 0') }}{%- endif -%}
    {{ return(
        column ~ " >= cast('" ~ window[0] ~ "' as " ~ dbt.type_timestamp() ~ ") and "
        ~ column ~ " <= cast('" ~ window[1] ~ "' as " ~ dbt.type_timestamp() ~ ")"
    ) }}
{%- endmacro %}
