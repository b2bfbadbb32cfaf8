{#- The first day of the month a contract month text names (`YYYY-MM` or `YYYY-MM-01`: MONTH_PATTERN in
    cost_pipeline/contract/schemas.py), as a date. The one reading of such a text: a ledger's month cell is grouped
    on it (newest_file_lines) as well as reported, so `2026-11` and `2026-11-01` are one month, not two. -#}
{% macro month_text_start(month) %}
    cast({{ dbt.concat(["substring(" ~ month ~ ", 1, 7)", "'-01'"]) }} as date)
{% endmacro %}
