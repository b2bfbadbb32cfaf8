{#- The largest device-sample models (int_device_samples_tiered, int_gpu_share_days) are built a chunk of hosts at a
    time on DuckDB. Their windows and groups hold every sample they order, and spill under the memory limit: at a
    5,120-GPU cluster-day (442 M samples) the two of them spilled more than the disk held (docs/benchmarks.md). Every
    window and group of theirs is within one host (a GPU belongs to its host), so a chunk of hosts is built exactly
    as a full build builds it, and holds only its share of the samples.

    The pre-hook ``host_chunks_begin(where)`` counts the samples the build reads (``where``: its filter on
    ``sampled_at`` of stg_telemetry__device_samples, or none) and sets the chunks: one per ``host_chunk_rows``
    (a var, 25 M by default) or part of it, and chunk 0 first. The model reads only the samples of the current chunk
    (``host_chunk_filter``: a hash of the host name), so its main statement builds chunk 0; the post-hook
    ``host_chunks_rest()`` inserts the other chunks, each in its own statement, before the model's other post-hooks.
    On Spark there is one chunk and no hook does anything. -#}

{% macro host_chunks_begin(where=none) -%}
    {%- if target.type == 'duckdb' -%}
        set variable cost_pipeline_host_chunks = (
            select greatest(1, cast(ceil(count(*) / {{ var('host_chunk_rows', 25000000) }}) as bigint))
            from {{ ref('stg_telemetry__device_samples') }}
            {%- if where is not none %} where {{ where }}{% endif %}
        );
        set variable cost_pipeline_host_chunk = 0
    {%- endif -%}
{%- endmacro %}

{% macro host_chunk_filter(hostname) -%}
    {%- if target.type == 'duckdb' -%}
        {#- Unset (a unit test, dbt show): one chunk, every host. One chunk folds to true, so no row is hashed. The
            modulo is taken in hash()'s UBIGINT: with the variable's BIGINT DuckDB widens both to HUGEINT, which cost
            ten times as much per sample (0.76 s against 0.07 s at 10 M samples), on every scan of every chunk. #}
        (
            cast(coalesce(getvariable('cost_pipeline_host_chunks'), 1) as ubigint) = 1
            or hash(coalesce({{ hostname }}, ''))
            % cast(coalesce(getvariable('cost_pipeline_host_chunks'), 1) as ubigint)
            = cast(coalesce(getvariable('cost_pipeline_host_chunk'), 0) as ubigint)
        )
    {%- else -%}
        1 = 1
    {%- endif -%}
{%- endmacro %}

{% macro host_chunks_rest() -%}
    {%- if target.type == 'duckdb' and execute -%}
        {%- set chunks = run_query("select getvariable('cost_pipeline_host_chunks')").columns[0].values()[0] -%}
        {%- for chunk in range(1, chunks | int) %}
        set variable cost_pipeline_host_chunk = {{ chunk }};
        insert into {{ this }} by name ({{ model.compiled_code }});
        {%- endfor %}
        reset variable cost_pipeline_host_chunks;
        reset variable cost_pipeline_host_chunk
    {%- else -%}
        select 1
    {%- endif -%}
{%- endmacro %}
