{#- The `fraction` quantile (linear interpolation, as percentile_cont) of a group's values, as an aggregate over
    rows that carry their value, its 1-based rank in ascending order within the group (`rank`) and the group's
    count (`count`). Portable: percentile functions differ per adapter and most take only a constant fraction,
    while this one takes the fraction as a column (a contract parameter of the row's version). -#}
{% macro ranked_quantile(value, rank, count, fraction) -%}
    sum(case
        when {{ rank }} = floor(1 + {{ fraction }} * ({{ count }} - 1))
            then {{ value }} * (1 - (1 + {{ fraction }} * ({{ count }} - 1) - floor(1 + {{ fraction }} * ({{ count }} - 1))))
        when {{ rank }} = floor(1 + {{ fraction }} * ({{ count }} - 1)) + 1
            then {{ value }} * (1 + {{ fraction }} * ({{ count }} - 1) - floor(1 + {{ fraction }} * ({{ count }} - 1)))
        else 0
    end)
{%- endmacro %}
