{#- Whether a FOCUS line of `service_category` is compute: every line but Storage (a null category too). The one
    place the rule is written: a job's bill (int_job_months_costed), whether a job is cloud-billed
    (int_job_months_split) and the cost lines' type (int_cost_lines_unioned) read it alike. -#}
{% macro is_cloud_compute(service_category) -%}
    coalesce({{ service_category }}, '') <> 'Storage'
{%- endmacro %}
