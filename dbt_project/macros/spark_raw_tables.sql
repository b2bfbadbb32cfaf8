{#- On Spark, every raw source table is a table over its Parquet folder under COST_SPARK_RAW (one folder per
    table, as `cost_pipeline.spark_raw.export_raw` writes them), made before the models build; so is each table of
    the `ops` source (the files' arrivals), over `ops/<table>` there. Other adapters read raw where ingest wrote it:
    nothing to do. -#}
{% macro spark_raw_tables() %}
    {%- if execute and target.type == 'spark' %}
        {%- set folder = env_var('COST_SPARK_RAW') | replace('\\', '\\\\') | replace("'", "\\'") %}
        {%- for node in graph.sources.values() if node.source_name in ('raw', 'ops') %}
            {%- set location = folder ~ '/' ~ ('' if node.source_name == 'raw' else node.schema ~ '/') ~ node.name %}
            {%- do run_query('create schema if not exists ' ~ node.schema) %}
            {%- do run_query('drop table if exists ' ~ node.schema ~ '.' ~ node.name) %}
            {%- do run_query("create table " ~ node.schema ~ "." ~ node.name ~ " using parquet location '"
                             ~ location ~ "'") %}
        {%- endfor %}
    {%- endif %}
{% endmacro %}
