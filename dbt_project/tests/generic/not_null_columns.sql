{#-
    The never-null columns of a model, checked in one pass: returns every row where one of `columns` is null,
    with null_columns naming which. One test per model instead of one per column: a night runs some 170 fewer
    dbt nodes (issue 15), and a failing row still says the column. Enforced marts state the same rule as a
    not_null constraint instead (DuckDB refuses the null as dbt builds the table).
-#}
{% test not_null_columns(model, columns) %}

{%- set named = [] %}
{%- for column in columns %}
    {%- do named.append("case when " ~ column ~ " is null then '" ~ column ~ " ' else '' end") %}
{%- endfor %}

select
    {{ dbt.concat(named) if named | length > 1 else named[0] }} as null_columns,
    *
from {{ model }}
where
    {%- for column in columns %}
    {{ column }} is null{% if not loop.last %} or{% endif %}
    {%- endfor %}

{% endtest %}
