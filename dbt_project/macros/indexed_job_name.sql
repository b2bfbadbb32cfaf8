{#- The Kubernetes Job a job label may name with a completion index: the label less a trailing -<digits> (the Job
    controller names an Indexed Job's pods <job name>-<completion index>-<5 random characters>, and the ingest keeps
    the pod name less its last part: train-b7-3-x7k2p is train-b7-3, of Job train-b7); null for a label without
    one. int_device_samples_attributed reads it only for a label that names no job running at the sample time. -#}
{% macro indexed_job_name(label) -%}
    {{ return(adapter.dispatch('indexed_job_name')(label)) }}
{%- endmacro %}

{% macro default__indexed_job_name(label) -%}
    {{ exceptions.raise_compiler_error('indexed_job_name has no implementation for ' ~ target.type) }}
{%- endmacro %}

{#- DuckDB and Spark both give the empty text when the pattern does not match. -#}
{% macro duckdb__indexed_job_name(label) -%}
    nullif(regexp_extract({{ label }}, '^(.+)-[0-9]+$', 1), '')
{%- endmacro %}

{% macro spark__indexed_job_name(label) -%}
    nullif(regexp_extract({{ label }}, '^(.+)-[0-9]+$', 1), '')
{%- endmacro %}
