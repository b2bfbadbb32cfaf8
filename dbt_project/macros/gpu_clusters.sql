{#- The cluster of a copy that names none (a file delivered again with the cluster column added): one resolution for
    int_device_samples_tiered, int_gpu_share_days and int_unattributed_gpu_days, so that each counts such a GPU as one
    (docs/fractional_gpus.md). Standard SQL: groups, having, coalesce, joins. -#}

{#- CTE body: the GPUs (or MIG instances: instance_key, -1 for the whole GPU) some of whose samples in ``relation``
    (where ``where``, if given) name a cluster and some none. Only their copies that name none need the cluster looked up
    (gpu_clusters). One group over the samples' keys, a few rows, so nearly free (no sort, no window); when every
    sample names its cluster, or none does, it is empty and the lookup reads nothing (a join with an empty side). -#}
{% macro mixed_gpus(relation, where=none) %}
    select
        hostname,
        gpu_index,
        coalesce(gpu_instance_id, -1) as instance_key
    from {{ relation }}
    {%- if where is not none %}
    where {{ where }}
    {%- endif %}
    group by hostname, gpu_index, coalesce(gpu_instance_id, -1)
    having max(case when cluster is null then 1 else 0 end) = 1 and max(cluster) is not null
{% endmacro %}

{#- CTE body: the cluster of a job's GPU (or instance) of mixed_gpus (job_key, hostname, gpu_index, instance_key,
    cluster): the one cluster its job's copies of it name, among the rows of ``relation`` (int_device_samples_attributed,
    read as ``samples``) where ``where`` (if given). A job that names its cluster has samples of that cluster or of none;
    one that names none may have both of one cluster (the same file delivered again with a cluster column), and then
    they are one GPU's. Copies naming two clusters name no one cluster: a copy naming none beside them is not known to
    be either's. ``by_day``: per sample day too (a sample_day column; int_gpu_share_days, int_unattributed_gpu_days,
    whose days depend on their own samples only). ``of_jobs`` false: the copies no job claims instead, the one cluster
    the GPU's unclaimed copies name (no job_key column; int_unattributed_gpu_days, and int_gpu_share_days for its
    unclaimed copies). A group joined back to each sample (join_gpu_clusters), not a window over every sample. -#}
{% macro gpu_clusters(relation, where=none, by_day=false, of_jobs=true) %}
    {%- set day = "cast(" ~ dbt.date_trunc('day', 'samples.sampled_at') ~ " as date)" %}
    {%- set job = ['samples.attributed_job_key'] if of_jobs else [] %}
    select
        {%- if of_jobs %}
        samples.attributed_job_key as job_key,
        {%- endif %}
        samples.hostname,
        samples.gpu_index,
        mixed_gpus.instance_key,
        {%- if by_day %}
        {{ day }} as sample_day,
        {%- endif %}
        max(samples.cluster) as cluster
    from {{ relation }} as samples
    inner join mixed_gpus
        on samples.hostname = mixed_gpus.hostname
        and samples.gpu_index = mixed_gpus.gpu_index
        and coalesce(samples.gpu_instance_id, -1) = mixed_gpus.instance_key
    where
        samples.attributed_job_key is {{ 'not null' if of_jobs else 'null' }}
        and samples.cluster is not null
        {%- if where is not none %}
        and {{ where }}
        {%- endif %}
    group by
        {{ (job + ['samples.hostname', 'samples.gpu_index', 'mixed_gpus.instance_key'] + ([day] if by_day else []))
            | join(', ') }}
    having min(samples.cluster) = max(samples.cluster)
{% endmacro %}

{#- A left join of gpu_clusters (the CTE ``clusters``) to ``samples`` (its job ``job_key``; none: gpu_clusters of_jobs
    false, joined to the copies no job claims only): ``clusters``.cluster is the cluster its job's (or the unclaimed)
    copies of its GPU name, if one. -#}
{% macro join_gpu_clusters(samples, job_key, by_day=false, clusters='gpu_clusters') %}
    left join {{ clusters }}
        on {{ samples }}.hostname = {{ clusters }}.hostname
        and {{ samples }}.gpu_index = {{ clusters }}.gpu_index
        and coalesce({{ samples }}.gpu_instance_id, -1) = {{ clusters }}.instance_key
        {%- if job_key is not none %}
        and {{ job_key }} = {{ clusters }}.job_key
        {%- else %}
        and {{ samples }}.attributed_job_key is null
        {%- endif %}
        {%- if by_day %}
        and cast({{ dbt.date_trunc('day', samples ~ '.sampled_at') }} as date) = {{ clusters }}.sample_day
        {%- endif %}
{% endmacro %}

{#- CTE body: the cluster the copies naming none are of at an instant (hostname, gpu_index, instance_key, sampled_at,
    cluster_key), from ``held`` (cluster_key: the cluster a copy names, '' for none; hostname, gpu_index,
    instance_key, sampled_at; holder: who holds the GPU then): the one named cluster of a holder whose copies of that
    instant name it and none (the same samples delivered without and with the cluster column), so that the holders
    whose copies name none (another job's file not delivered again) share that cluster's GPU with it. Named clusters
    of two such holders: not known to be either's. -#}
{% macro unnamed_clusters(held) %}
    select
        hostname,
        gpu_index,
        instance_key,
        sampled_at,
        max(last_named) as cluster_key
    from (
        -- The holders whose copies of the instant name a cluster and none, with the clusters they name.
        select
            hostname,
            gpu_index,
            instance_key,
            sampled_at,
            min(case when cluster_key <> '' then cluster_key end) as first_named,
            max(case when cluster_key <> '' then cluster_key end) as last_named
        from {{ held }}
        group by hostname, gpu_index, instance_key, sampled_at, holder
        having max(case when cluster_key = '' then 1 else 0 end) = 1 and max(cluster_key) <> ''
    ) as named_and_unnamed
    group by hostname, gpu_index, instance_key, sampled_at
    having min(first_named) = max(last_named)
{% endmacro %}

{#- One sample, as copies delivered again are matched (int_gpu_share_days' delivered_again): a GPU (or MIG instance:
    instance_key, -1 for the whole GPU), a job label (label_key, '' for none) and an instant; of ``samples``' copy. -#}
{% macro sample_key(samples) %}
        {{ samples }}.hostname,
        {{ samples }}.gpu_index,
        coalesce({{ samples }}.gpu_instance_id, -1) as instance_key,
        coalesce({{ samples }}.job_id, '') as label_key,
        {{ samples }}.sampled_at
{%- endmacro %}

{#- Whether ``samples``' copy is the sample ``keys`` (a relation of sample_key's columns) names. -#}
{% macro sample_key_matches(samples, keys) %}
        {{ samples }}.hostname = {{ keys }}.hostname
        and {{ samples }}.gpu_index = {{ keys }}.gpu_index
        and coalesce({{ samples }}.gpu_instance_id, -1) = {{ keys }}.instance_key
        and coalesce({{ samples }}.job_id, '') = {{ keys }}.label_key
        and {{ samples }}.sampled_at = {{ keys }}.sampled_at
{%- endmacro %}

{#- CTE body: the samples (sample_key) of which ``relation`` (int_device_samples_attributed's rows, or some of them)
    has a copy no job claims that names no cluster. A few rows, and none when every copy names its cluster: the
    lookup of claimed_samples then reads nothing (a join with an empty side). -#}
{% macro unclaimed_unnamed_samples(relation) %}
    select distinct
        {{- sample_key('copies') }}
    from {{ relation }} as copies
    where copies.attributed_job_key is null and copies.cluster is null
{% endmacro %}

{#- CTE body: the samples of ``unnamed`` (unclaimed_unnamed_samples) a job claims in a copy that names a cluster,
    among the rows of ``relation`` (int_device_samples_attributed, read as ``samples``, where ``where`` if given). Such
    a sample's copy naming none (its host held at that instant by jobs of two clusters: several_jobs_on_host, as a
    copy naming none matches any cluster's jobs) is the claimed sample delivered without the cluster column, not GPU
    time no job claims: int_unattributed_gpu_days and int_gpu_share_days leave it out (join_claimed_samples), so
    the job's copy stands for the sample once, and no GPU of no cluster is left beside it. -#}
{% macro claimed_samples(relation, unnamed, where=none) %}
    select distinct
        {{- sample_key('samples') }}
    from {{ relation }} as samples
    inner join {{ unnamed }} as unnamed
        on {{ sample_key_matches('samples', 'unnamed') }}
    where
        samples.attributed_job_key is not null
        and samples.cluster is not null
        {%- if where is not none %}
        and {{ where }}
        {%- endif %}
{% endmacro %}

{#- A left join of claimed_samples (the CTE ``claimed``) to ``samples``' copies no job claims that name no cluster:
    ``claimed``.sampled_at is not null on a copy of a sample a job claims in a copy naming its cluster, which is
    left out (where ``claimed``.sampled_at is null). -#}
{% macro join_claimed_samples(samples, claimed='claimed_samples') %}
    left join {{ claimed }}
        on {{ samples }}.attributed_job_key is null
        and {{ samples }}.cluster is null
        and {{ sample_key_matches(samples, claimed) }}
{% endmacro %}
