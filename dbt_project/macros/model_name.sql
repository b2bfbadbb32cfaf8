{#- A served model's one name: lower case, without surrounding spaces (Assistant-Small, " assistant-small" and
    assistant-small are one model). Requests, replicas and escalations name models by it, so the serving joins and
    every serving mart see one spelling; the raw tables keep what the files said. -#}
{% macro model_name(model) -%}
    lower(trim({{ model }}))
{%- endmacro %}
