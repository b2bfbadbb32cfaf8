{#-
    A sum across rows: the rows sharing `group_by` (columns) have `column` adding up to at most `at_most` (a person's
    hours of one day across entries, and across exports once staging has chosen between deliveries). Returns every
    row of a group over it, with the group's sum as `group_total`: which row is wrong the rows do not say, and on a
    staging model that carries source_file and source_line each names its landing file and line, so the night can
    hold them all (cost_pipeline/dbt_failures.py).
-#}
{% test sum_at_most(model, column_name, group_by, at_most) %}

{%- set key = group_by | join(', ') %}

select *
from (
    select
        *,
        sum({{ column_name }}) over (partition by {{ key }}) as group_total
    from {{ model }}
) as summed
where group_total > {{ at_most }}

{% endtest %}
