{#- On Spark, every raw source table is a table over its Parquet folder under COST_SPARK_RAW (one folder per
    table, as `cost_pipeline.spark_raw.export_raw` writes them), made before the models build. Other adapters
    read raw where ingest wrote it: nothing to do. -#}
{% macro spark_raw_tables() %}
    {%- if execute and target.type == 'spark' %}
        {%- set folder = env_var('COST_SPARK_RAW') | replace('\\', '\\\\') | replace("'", "\\'") %}
        {%- do run_query('create schema if not exists raw') %}
        {%- for node in graph.sources.values() if node.source_name == 'raw' %}
            {%- do run_query('drop table if exists raw.' ~ node.name) %}
            {%- do run_query("create table raw." ~ node.name ~ " using parquet location '" ~ folder ~ "/"
                             ~ node.name ~ "'") %}
        {%- endfor %}
    {%- endif %}
{% endmacro %}
