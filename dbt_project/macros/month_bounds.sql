{#-
    One row per month of `months` (a relation or CTE with a date column month_start) with its bounds as timestamps:
    month_from (inclusive) and month_until (exclusive). The one place month boundaries are computed.
-#}
{% macro month_bounds(months) %}
select distinct
    month_start,
    cast(month_start as {{ dbt.type_timestamp() }}) as month_from,
    cast({{ dbt.dateadd('month', 1, 'month_start') }} as {{ dbt.type_timestamp() }}) as month_until
from {{ months }}
{% endmacro %}
