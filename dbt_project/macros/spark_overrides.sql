{#- Where dbt-spark's own macros fail this project on a local Spark session, the root project's replace them (dbt's
    own namespace: a root project's `spark__` macro wins over the adapter's). -#}

{#- split_part: dbt-spark escapes the delimiter for a regular expression by its first character only, so 'g.'
    (a MIG profile's slices, macros/mig_slices.sql) became the invalid pattern `\g.`. Spark 3.3 has split_part,
    which takes the delimiter as text. -#}
{% macro spark__split_part(string_text, delimiter_text, part_number) -%}
    split_part({{ string_text }}, {{ delimiter_text }}, {{ part_number }})
{%- endmacro %}

{#- A mart's not_null constraints on Spark. dbt-spark sets them with ALTER COLUMN ... SET NOT NULL, which only
    Delta tables take; the local session stores Parquet tables, so the columns are checked once the table is
    built instead: a null in a constrained column fails the model, as DuckDB refuses it when it builds the table.
    (dbt's own namespace: the root project's macro replaces dbt-spark's.) -#}
{% macro spark__persist_constraints(relation, model) %}
    {%- if config.get('contract').enforced %}
        {%- set columns = [] %}
        {%- for name, column in model.columns.items() %}
            {%- if column.constraints | selectattr('type', 'equalto', 'not_null') | list %}
                {%- do columns.append(name) %}
            {%- endif %}
        {%- endfor %}
        {%- if columns %}
            {%- set counts = run_query('select count_if(' ~ columns | join(' is null), count_if(') ~ ' is null) from '
                                       ~ relation) %}
            {%- set nulls = [] %}
            {%- for name in columns %}
                {%- if counts.columns[loop.index0].values()[0] > 0 %}{% do nulls.append(name) %}{% endif %}
            {%- endfor %}
            {%- if nulls %}
                {{ exceptions.raise_compiler_error(relation ~ ': null in not_null column(s) ' ~ nulls | join(', ')) }}
            {%- endif %}
        {%- endif %}
    {%- endif %}
{% endmacro %}
