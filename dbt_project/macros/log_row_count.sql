{#
    A post-hook on every model: a model stored as a table (table, incremental, snapshot) logs its row count, which
    the Dagster dbt asset attaches to the model's materialisation as `dagster/row_count`
    (cost_pipeline/defs/dbt.py, ROW_COUNT_LOG). A view logs nothing: counting it would run it, and the staging views
    read all of raw. Rendered empty, so dbt runs no statement for the hook.
#}
{% macro log_row_count() %}
    {%- if execute and model.config.materialized in ('table', 'incremental', 'snapshot') -%}
        {%- set counted = run_query('select count(*) from ' ~ this) -%}
        {%- do log('cost_pipeline row_count ' ~ counted.columns[0].values()[0], info=True) -%}
    {%- endif -%}
{% endmacro %}
