{#- Whether a quarantined replica run (`runs`: a row of int_replica_runs_quarantined) may have held GPUs in the
    month starting `month_start` (a date, the first of a month): it started before the month's end and ended after
    its start, a bound that is not known (null: blank, not a time, or a replicas file refused whole) holding any
    month. The one test of it: the month's shared serving costs are unknown (int_model_months_costed) and left out
    of their reconciliation. -#}
{% macro quarantined_run_in_month(runs, month_start) -%}
    ({{ runs }}.started_at is null
        or {{ runs }}.started_at < cast({{ dbt.dateadd('month', 1, month_start) }} as {{ dbt.type_timestamp() }}))
    and ({{ runs }}.ended_at is null or {{ runs }}.ended_at > cast({{ month_start }} as {{ dbt.type_timestamp() }}))
{%- endmacro %}
