{#- An id as records are matched by it: case-folded (R-L1 and r-l1 are one replica, one request, one batch). A
    re-export may change an id's case; staging decides "the same record" by this expression, and the contract's
    within-file keys fold the same columns (schemas.Col.folded). The rows keep what the files said. -#}
{% macro same_id(id) -%}
    lower({{ id }})
{%- endmacro %}
