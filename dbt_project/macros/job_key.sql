{#- The stable key of one scheduler job: its cluster (empty when the export names none), its JobID and its submit
    time. JobIDs are reused after a controller reset and across clusters; two jobs that share a JobID differ in
    cluster or submit time, so they keep two keys. job_id stays the id people read; job_key is what models join on.
    Portable: dbt's cross-database concat and cast, no hash. -#}
{% macro job_key(cluster, job_id, submit_at) -%}
    {{ dbt.concat([
        "coalesce(" ~ cluster ~ ", '')", "'/'", job_id, "'@'",
        "coalesce(" ~ dbt.cast(submit_at, dbt.type_string()) ~ ", '')",
    ]) }}
{%- endmacro %}
