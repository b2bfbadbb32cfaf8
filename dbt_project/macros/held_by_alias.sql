{#- Whether the job of an int_job_aliases_resolved row (`aliases`) held its id at `at`: the rule that attributes a
    record naming a reused JobID to the one job with that id whose run contains the record's time. -#}
{% macro held_by_alias(aliases, at) -%}
    ({{ aliases }}.held_from is null or {{ at }} >= {{ aliases }}.held_from)
    and ({{ aliases }}.held_until is null or {{ at }} < {{ aliases }}.held_until)
{%- endmacro %}
