{#- A host's short name, lower case: the one name of a host that goes by several (node-01, NODE-01 and
    node-01.cluster.example). Device samples and Slurm node lists match by it, and a GPU is one GPU under each. -#}
{% macro short_host(hostname) -%}
    lower({{ dbt.split_part(hostname, "'.'", 1) }})
{%- endmacro %}
