{#-
    Grain check for a model keyed on several columns (for example one row per month and model): returns every
    combination of columns that occurs more than once, with how often. A model-level test; null key values
    count as a value, so two rows with the same nulls are duplicates too. With stored failures, a model that carries
    source_file and source_line gives its duplicate rows themselves (macros/failing_source_rows.sql).
-#}
{% test unique_combination(model, columns) %}

{%- set key = columns | join(', ') %}

{%- if traces_source_rows(model) %}
{{ rows_sharing_key(model, key, 'occurrences') }}
{%- else %}
select
    {{ key }},
    count(*) as occurrences
from {{ model }}
group by {{ key }}
having count(*) > 1
{%- endif %}

{% endtest %}
