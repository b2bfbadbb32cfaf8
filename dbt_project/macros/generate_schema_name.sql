{#- Models land in the schema named in dbt_project.yml (staging, intermediate, marts), not <target>_<name>. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {{ custom_schema_name | trim if custom_schema_name is not none else target.schema }}
{%- endmacro %}
