{#-
    Share whole cents among rows by weight so that the parts add up to the total exactly (largest remainder).

    relation      a relation or CTE name with one row per part
    partition_by  the columns naming one total (e.g. month_start, model)
    total_cents   an integer column holding that total, repeated on each of its rows
    weight        a non-negative weight column; if a total's weights are all 0 it is shared equally
    tie_breaker   the columns (comma-separated) that order equal remainders deterministically, nulls last on every
                  engine (DuckDB's default; Spark's ascending default is nulls first)

    Returns a select of every column of relation plus allocated_cents (bigint). Each part gets the floor of its
    exact share; the cents left over go one each to the parts with the largest remainders, so no part is
    negative and the sum is the total whatever rounding the division carried.
-#}
{% macro largest_remainder_cents(relation, partition_by, total_cents, weight, tie_breaker) %}
{%- set partition = partition_by | join(', ') -%}
{%- set tie_order = (tie_breaker.split(',') | map('trim') | join(' nulls last, ')) ~ ' nulls last' -%}
with lr_shares as (
    select
        {{ relation }}.*,
        sum({{ weight }}) over (partition by {{ partition }}) as lr_weight_sum,
        count(*) over (partition by {{ partition }}) as lr_parts
    from {{ relation }}
),

lr_exact as (
    select
        lr_shares.*,
        case
            when lr_weight_sum > 0 then cast({{ total_cents }} as double) * {{ weight }} / lr_weight_sum
            else cast({{ total_cents }} as double) / lr_parts
        end as lr_exact_cents
    from lr_shares
),

lr_floored as (
    select
        lr_exact.*,
        floor(lr_exact_cents) as lr_floor_cents,
        lr_exact_cents - floor(lr_exact_cents) as lr_remainder
    from lr_exact
),

lr_ranked as (
    select
        lr_floored.*,
        {{ total_cents }} - sum(lr_floor_cents) over (partition by {{ partition }}) as lr_leftover,
        row_number() over (
            partition by {{ partition }} order by lr_remainder desc, {{ tie_order }}
        ) as lr_rank
    from lr_floored
)

select
    lr_ranked.*,
    cast(lr_floor_cents + case when lr_rank <= lr_leftover then 1 else 0 end as bigint) as allocated_cents
from lr_ranked
{% endmacro %}
