{#- Whether the job of an int_job_aliases_resolved row (`aliases`) held its id at `at`: the rule that attributes a
    record naming a reused JobID to the one job with that id whose run contains the record's time. -#}
{% macro held_by_alias(aliases, at) -%}
    ({{ aliases }}.held_from is null or {{ at }} >= {{ aliases }}.held_from)
    and ({{ aliases }}.held_until is null or {{ at }} < {{ aliases }}.held_until)
{%- endmacro %}

{#- The same rule among the jobs of the alias row's own cluster (cluster_held_from, cluster_held_until): a record that
    names its cluster (a device sample's) is matched to the jobs of that cluster, which reuse their ids on their own.
    The jobs that name no cluster hold their ids among themselves alike. -#}
{% macro held_by_alias_in_cluster(aliases, at) -%}
    ({{ aliases }}.cluster_held_from is null or {{ at }} >= {{ aliases }}.cluster_held_from)
    and ({{ aliases }}.cluster_held_until is null or {{ at }} < {{ aliases }}.cluster_held_until)
{%- endmacro %}
