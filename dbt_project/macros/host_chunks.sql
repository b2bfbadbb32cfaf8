{#- The largest device-sample models (int_device_samples_tiered, int_gpu_share_days) are built a chunk of hosts at a
    time on DuckDB. Their windows and groups hold every sample they order, and spill under the memory limit: at a
    5,120-GPU cluster-day (442 M samples) the two of them spilled more than the disk held (docs/benchmarks.md). Every
    window and group of theirs is within one host (a GPU belongs to its host), so a chunk of hosts is built exactly
    as a full build builds it, and holds only its share of the samples.

    The pre-hook ``host_chunks_begin(where)`` counts the samples the build reads per host (``where``: its
    filter on ``sampled_at`` of stg_telemetry__device_samples, or none) and sets the chunks: one per
    ``host_chunk_rows`` (a var, 25 M by default) or part of it, each a run of hosts (short names) in their order holding about
    as many samples as the others, and chunk 0 first. The model reads only the samples of the current chunk
    (``host_chunk_filter``), so its main statement builds chunk 0; the post-hook ``host_chunks_rest()`` inserts each
    other chunk that holds a host, each in its own statement, before the model's other post-hooks. On Spark there is
    one chunk and no hook does anything.

    The filter names the chunk's hosts, as the files spell them (``reported_hostname``, the raw column), as a list
    (``cost_pipeline_chunk_hosts``), which DuckDB folds into the
    statement as constants and pushes through int_device_samples_attributed's joins down to the scans of the raw
    samples: a chunk reads and joins to the jobs only its own hosts' samples (the view counts the GPUs a host reported
    at an instant over every host name, one scan more for unlabelled samples). How much of a scan is skipped depends
    on raw's order: a vector or row group holding none of the chunk's hosts is, and ingest keeps each file's order.
    A filter on ``hash(hostname)``, as before, was not pushed: every chunk read and joined every sample, then kept its
    own (at 442 M samples in 18 chunks, each model read the day 18 times).

    A chunk is a set of names, so a host name is in one chunk in every cluster (gpu-01 of cluster a and of cluster b):
    the models' windows and groups, within a cluster and host, are built in it alike.

    Every host the model reads must be counted by its pre-hook, or its samples are in no chunk: the pre-hook's
    ``where`` is the same filter on ``sampled_at`` (the same macro) the model applies to every read of the samples. -#}

{% macro host_chunks_begin(where=none) -%}
    {%- if target.type == 'duckdb' -%}
        {#- A host is in the chunk its samples' middle falls in: (2 x before + samples) < 2 x total, so the last chunk
            is chunks - 1. A host is its short name (staging's hostname), and the chunk lists every spelling of it
            the files use (reported_hostname): a window over one GPU sees its samples under every name. -#}
        set variable cost_pipeline_hosts = (
            select {
                'chunks': coalesce(any_value(chunks), 1),
                'hosts': coalesce(
                    list({'name': reported_hostname, 'chunk': (2 * before + samples) * chunks // (2 * total)})
                        filter (where reported_hostname is not null),
                    []
                )
            }
            from (
                select
                    reported_hostname,
                    samples,
                    before,
                    total,
                    greatest(1, cast(ceil(total / {{ var('host_chunk_rows', 25000000) }}) as bigint)) as chunks
                from (
                    select
                        reported_hostname,
                        sum(name_samples) over (partition by hostname) as samples,
                        -- The samples of the hosts before this one (a range frame: every name of a host is a peer).
                        sum(name_samples) over (order by hostname range between unbounded preceding and current row)
                        - sum(name_samples) over (partition by hostname) as before,
                        sum(name_samples) over () as total
                    from (
                        select hostname, reported_hostname, count(*) as name_samples
                        from {{ ref('stg_telemetry__device_samples') }}
                        {%- if where is not none %} where {{ where }}{% endif %}
                        group by hostname, reported_hostname
                    )
                )
            )
        );
        {{ host_chunk_set(0) }}
    {%- endif -%}
{%- endmacro %}

{#- Makes ``chunk`` the current chunk: its number, and the host names it holds. -#}
{% macro host_chunk_set(chunk) -%}
    set variable cost_pipeline_host_chunk = {{ chunk }};
    set variable cost_pipeline_chunk_hosts = list_transform(
        list_filter(getvariable('cost_pipeline_hosts').hosts, lambda host: host.chunk = {{ chunk }}),
        lambda host: host.name
    )
{%- endmacro %}

{% macro host_chunk_filter(hostname) -%}
    {%- if target.type == 'duckdb' -%}
        {#- Unset (a unit test, dbt show, another model reading the attribution view): one chunk, every host. One
            chunk folds to true. A sample without a host name (ingest refuses one) would be chunk 0's. #}
        (
            coalesce(getvariable('cost_pipeline_hosts').chunks, 1) = 1
            or list_contains(getvariable('cost_pipeline_chunk_hosts'), {{ hostname }})
            or ({{ hostname }} is null and getvariable('cost_pipeline_host_chunk') = 0)
        )
    {%- else -%}
        1 = 1
    {%- endif -%}
{%- endmacro %}

{#- The chunks after chunk 0 that hold a host, each inserted by its own statement; then the variables are reset. -#}
{% macro host_chunks_rest() -%}
    {%- if target.type == 'duckdb' and execute -%}
        {%- set chunks = run_query(
            "select distinct host.chunk from (select unnest(getvariable('cost_pipeline_hosts').hosts) as host) "
            "where host.chunk > 0 order by 1"
        ).columns[0].values() -%}
        {%- for chunk in chunks %}
        {{ host_chunk_set(chunk | int) }};
        insert into {{ this }} by name ({{ model.compiled_code }});
        {%- endfor %}
        reset variable cost_pipeline_hosts;
        reset variable cost_pipeline_host_chunk;
        reset variable cost_pipeline_chunk_hosts
    {%- else -%}
        select 1
    {%- endif -%}
{%- endmacro %}
