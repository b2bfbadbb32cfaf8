{#- A delivered sample's columns as int_gpu_share_days reads them, from the relation named ``samples``; its cluster
    ``cluster`` (an expression) when given. -#}
{% macro delivered_columns(samples, cluster=none) %}
        {{ cluster if cluster else samples ~ '.cluster' }} as cluster,
        {{ samples }}.hostname,
        {{ samples }}.gpu_index,
        {{ samples }}.gpu_instance_id,
        {{ samples }}.gpu_instance_profile,
        {{ samples }}.sampled_at,
        cast({{ dbt.date_trunc('day', samples ~ '.sampled_at') }} as date) as sample_day,
        {{ samples }}.attributed_job_key as job_key,
        {{ samples }}.attribution,
        cast({{ dbt.split_part(samples ~ '.gpu_instance_profile', "'g.'", 1) }} as integer) as instance_slices
{%- endmacro %}


{#- ``samples`` is a copy of a sample in ``delivered_again`` (int_gpu_share_days): same GPU or instance, label,
    instant (its cluster too: gpu-01 of another cluster is another GPU). -#}
{% macro delivered_again_matches(samples) %}
        {{ samples }}.hostname = delivered_again.hostname
        and {{ samples }}.cluster is not distinct from delivered_again.cluster
        and {{ samples }}.gpu_index = delivered_again.gpu_index
        and coalesce({{ samples }}.gpu_instance_id, -1) = delivered_again.instance_key
        and coalesce({{ samples }}.job_id, '') = delivered_again.label_key
        and {{ samples }}.sampled_at = delivered_again.sampled_at
{%- endmacro %}
