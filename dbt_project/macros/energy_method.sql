{#- How a row's measured GPU energy was measured (docs/energy.md), from the GPU-seconds each method stands for:
    counter (the GPUs' energy counters), power (power draw x time), counter_and_power (some of each) or
    unobserved (neither: the energy figures are null). -#}
{% macro energy_method(counter_seconds, power_seconds) -%}
    case
        when {{ counter_seconds }} > 0 and {{ power_seconds }} > 0 then 'counter_and_power'
        when {{ counter_seconds }} > 0 then 'counter'
        when {{ power_seconds }} > 0 then 'power'
        else 'unobserved'
    end
{%- endmacro %}
