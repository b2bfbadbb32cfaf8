{#- Each row's `amount` (money of any precision, signed: a FOCUS credit or correction is negative) in whole cents,
    such that the rows of a partition add up to their exact sum rounded to the cent, once: a row takes its
    partition's running sum through it, rounded, less the running sum before it, rounded (ordered by `order_by`,
    which must name one row). Make the partition the whole that must sum exactly (a FOCUS invoice), and order its
    rows by the columns readers group them by: each group is then a run of rows whose cents are within a cent of its
    exact sum, and every reader that sums the rows' cents agrees with every other. A null amount is null (a
    partition's null rows add nothing). -#}
{% macro cumulative_cents(amount, partition_by, order_by) -%}
    {%- set window = 'partition by ' ~ (partition_by | join(', ')) ~ ' order by ' ~ (order_by | join(', ')) -%}
    case when {{ amount }} is not null then
        cast(round(sum({{ amount }}) over ({{ window }} rows between unbounded preceding and current row) * 100, 0)
            as bigint)
        - coalesce(cast(round(
            sum({{ amount }}) over ({{ window }} rows between unbounded preceding and 1 preceding) * 100, 0)
            as bigint), 0)
    end
{%- endmacro %}
