{#- Fractional GPUs (docs/fractional_gpus.md). A MIG profile names its compute slices first: 3 in 3g.40gb. -#}
{% macro mig_profile_slices(profile) -%}
    cast({{ dbt.split_part(profile, "'g.'", 1) }} as integer)
{%- endmacro %}

{#- The compute slices of the GPU a MIG profile is carved from, per contract version: profile null is the contract's
    mig_total_slices; a row per mig_total_slices.<profile> names a profile of a GPU model with another number (A30's
    2g.12gb: 4). Join it twice, for the default and for the profile, and take the profile's where there is one. -#}
{% macro mig_slice_totals() %}
    select
        contract_version,
        case when parameter_name = 'mig_total_slices' then null
            else {{ dbt.right('parameter_name', dbt.length('parameter_name') ~ ' - 17') }} end as profile,
        cast(parameter_value as integer) as total_slices
    from {{ ref('stg_contract__parameters') }}
    where parameter_name = 'mig_total_slices' or parameter_name like 'mig_total_slices.%'
{% endmacro %}

{#- A job's GPUs as GPU-equivalents: whole GPUs, a MIG instance's slices over its GPU's total, Slurm GPU shards and
    CUDA MPS shares over those that make a GPU. `job` is the relation alias holding gpus_<kind>, mig_instances_<kind>,
    shards_<kind> and mps_<kind>; `mig_slices` and `mig_instances` may be given instead (a request read as its
    allocation's); `counts` holds shards_per_gpu and mps_per_gpu. -#}
{% macro gpu_equivalents(job, kind, total_slices, counts, mig_instances=none, mig_slices=none) -%}
    {%- set instances = mig_instances or job ~ '.mig_instances_' ~ kind -%}
    {%- set slices = mig_slices or job ~ '.mig_slices_' ~ kind -%}
    {{ job }}.gpus_{{ kind }} - {{ instances }} + cast({{ slices }} as double) / {{ total_slices }}
        + case when {{ job }}.shards_{{ kind }} = 0 then 0
            else cast({{ job }}.shards_{{ kind }} as double) / {{ counts }}.shards_per_gpu end
        + case when {{ job }}.mps_{{ kind }} = 0 then 0
            else cast({{ job }}.mps_{{ kind }} as double) / {{ counts }}.mps_per_gpu end
{%- endmacro %}

{#- The same x `seconds`, in whole GPU-seconds: whole GPUs' exactly, a fraction's rounded once to the second. -#}
{% macro gpu_equivalent_seconds(job, kind, total_slices, counts, seconds, mig_instances=none, mig_slices=none) -%}
    {%- set instances = mig_instances or job ~ '.mig_instances_' ~ kind -%}
    case when {{ instances }} = 0 and {{ job }}.shards_{{ kind }} = 0 and {{ job }}.mps_{{ kind }} = 0
        then {{ job }}.gpus_{{ kind }} * {{ seconds }}
        else cast(round(({{ gpu_equivalents(job, kind, total_slices, counts, mig_instances, mig_slices) }})
            * {{ seconds }}, 0) as bigint) end
{%- endmacro %}

{#- The two joins against a `slice_totals` CTE ({{ mig_slice_totals() }}) that give `total_slices_of(profile)`. -#}
{% macro join_slice_totals(contract_version, profile) %}
    left join slice_totals as default_totals
        on {{ contract_version }} = default_totals.contract_version and default_totals.profile is null
    left join slice_totals as profile_totals
        on {{ contract_version }} = profile_totals.contract_version and {{ profile }} = profile_totals.profile
{% endmacro %}

{% macro total_slices_of() -%}
    coalesce(profile_totals.total_slices, default_totals.total_slices)
{%- endmacro %}

{#- The share of its GPU a sample stands for: 1 for a whole GPU, a MIG instance's slices over its GPU's total. -#}
{% macro gpu_share(profile) -%}
    case when {{ profile }} is null then 1.0
        else cast({{ mig_profile_slices(profile) }} as double) / {{ total_slices_of() }} end
{%- endmacro %}

{#- The compute slices of a GPU model a Slurm GRES type names (mig_total_slices_model.<model>: a30 -> 4), per
    contract version; a job's type (mig_gpu_type, nvidia_a30) holds the model's name. -#}
{% macro mig_model_totals() %}
    select
        contract_version,
        {{ dbt.right('parameter_name', dbt.length('parameter_name') ~ ' - 23') }} as model,
        cast(parameter_value as integer) as total_slices
    from {{ ref('stg_contract__parameters') }}
    where parameter_name like 'mig_total_slices_model.%'
{% endmacro %}
