{#-
    One row per calendar month from the first to the last month of `months` (a relation or CTE with a date column
    month_start, each the first of a month), every month between them included, with its bounds as timestamps:
    month_from (inclusive) and month_until (exclusive). A job or replica that runs through a month no other row
    starts or ends in is in that month too. The one place month boundaries are computed. At most `max_months`
    months (341 years; the contract's times are far within it): the split models' tests check that every second
    of a job or replica lands in a month.
-#}
{% macro month_bounds(months, max_months=4096) %}
select
    month_start,
    cast(month_start as {{ dbt.type_timestamp() }}) as month_from,
    cast({{ dbt.dateadd('month', 1, 'month_start') }} as {{ dbt.type_timestamp() }}) as month_until
from (
    select
        cast({{ dbt.dateadd('month', 'cast(month_numbers.generated_number as integer) - 1',
                            'month_range.first_month') }} as date) as month_start,
        month_range.last_month
    from (
        select min(month_start) as first_month, max(month_start) as last_month from {{ months }}
    ) as month_range
    cross join ({{ dbt.generate_series(max_months) }}) as month_numbers
) as spine
where month_start <= last_month
{% endmacro %}

{#- The first and the last month rows of `relation` run in, from `start_column` (inclusive) to `end_column`
    (exclusive: a run that ends at midnight on the first of a month does not run in that month), as month_start
    rows for month_bounds. -#}
{% macro months_run(relation, start_column, end_column) %}
{%- set last_second = 'greatest(' ~ start_column ~ ', ' ~ dbt.dateadd('second', -1, end_column) ~ ')' %}
select cast({{ dbt.date_trunc('month', start_column) }} as date) as month_start from {{ relation }}
union
select cast({{ dbt.date_trunc('month', last_second) }} as date) from {{ relation }}
{% endmacro %}
