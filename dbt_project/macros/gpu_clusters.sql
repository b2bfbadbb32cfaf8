{#- The cluster of a copy that names none (a file delivered again with the cluster column added): one resolution for
    int_device_samples_tiered, int_gpu_share_days and int_unattributed_gpu_days, so that each counts such a GPU as one
    (docs/fractional_gpus.md). Copies are one sample only if they measured the same (copy_verdicts): a copy naming
    none whose readings differ from every named copy of its sample is another GPU, which no rule here resolves
    (resolved_cluster, unnamed_clusters); and a GPU's named cluster is its copies' naming none only when some of them
    are its named copies delivered again (delivered_again_gpus). Standard SQL: groups, having, coalesce, joins. -#}

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
{% macro gpu_clusters(relation, where=none, by_day=false, of_jobs=true, evidence='delivered_again_gpus') %}
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
    -- Only a GPU some of whose copies naming none are its named copies delivered again (delivered_again_gpus).
    inner join {{ evidence }} as evidence
        on samples.hostname = evidence.hostname
        and samples.gpu_index = evidence.gpu_index
        and mixed_gpus.instance_key = evidence.instance_key
        and coalesce(samples.attributed_job_key, '') = evidence.holder_key
        {%- if by_day %}
        and {{ day }} = evidence.sample_day
        {%- endif %}
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
    instance_key, sampled_at; holder: who holds the GPU then; other_gpu: 1 for a copy copy_verdicts says is another
    GPU, which neither resolves nor is resolved): the one named cluster of a holder whose copies of that instant name
    it and none (the same samples delivered without and with the cluster column), so that the holders whose copies
    name none (another job's file not delivered again) share that cluster's GPU with it. Named clusters of two such
    holders: not known to be either's. -#}
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
        where other_gpu = 0
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

{#- The readings a re-export repeats: what the GPU measured at the instant (stg_telemetry__device_samples' activity,
    NVLink, power and energy counter columns). Two copies of one sample key (sample_key) are one sample only if they
    carry the same readings; the cluster and the file are not readings. -#}
{% macro sample_readings() -%}
    {{ return([
        'gr_engine_active', 'sm_active', 'tensor_active', 'nvlink_tx_bytes_per_second',
        'nvlink_rx_bytes_per_second', 'power_watts', 'energy_counter_mj']) }}
{%- endmacro %}

{#- Whether the copies ``a`` and ``b`` measured different things: a reading both carry differs by more than 1e-5 of the
    larger magnitude (at least 1, so near zero by 1e-5 absolutely). One value written to CSV by any round-trip writer
    and to Parquet reads back as the same double; 1e-5 also takes a re-export through float32 (about 6e-8) or printed
    to six significant digits (5e-6) as the same reading, while two GPUs' power draws or energy counters (mJ since
    the driver loaded) agree to five significant digits by chance only. A reading one copy lacks (blank power, a file
    without the energy counter) is no evidence either way. Never null. -#}
{% macro readings_differ(a, b) -%}
    (
    {%- for reading in sample_readings() %}
        {{ 'or ' if not loop.first }}(
            {{ a }}.{{ reading }} is not null and {{ b }}.{{ reading }} is not null
            and abs(cast({{ a }}.{{ reading }} as double) - cast({{ b }}.{{ reading }} as double))
            > 0.00001 * greatest(
                abs(cast({{ a }}.{{ reading }} as double)), abs(cast({{ b }}.{{ reading }} as double)), 1
            )
        )
    {%- endfor %}
    )
{%- endmacro %}

{#- CTE body: the copies in ``relation`` (int_device_samples_attributed's rows, or some of them) that name no cluster,
    each with its sample key (sample_key), its file and line (one copy), whether a job claims it, and its readings:
    what copy_verdicts compares with the copies naming a cluster. ``unclaimed``: only those no job claims. -#}
{% macro unnamed_copies(relation, unclaimed=false) %}
    select
        {{- sample_key('copies') }},
        copies.source_file,
        copies.source_line,
        copies.attributed_job_key,
        {%- for reading in sample_readings() %}
        copies.{{ reading }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ relation }} as copies
    where copies.cluster is null
    {%- if unclaimed %}
        and copies.attributed_job_key is null
    {%- endif %}
{% endmacro %}

{#- CTE body: what the copies naming a cluster of the same sample (sample_key) say of each copy of ``unnamed``
    (unnamed_copies) that has any, among the rows of ``relation`` (int_device_samples_attributed's, read as ``samples``,
    where ``where`` if given); one row per such copy (source_file, source_line):
    - is_other_gpu 1: every named copy of its sample measured something else (readings_differ): it is not a copy of
      theirs delivered again but another GPU of a host of the same name, of no known cluster: no rule resolves its
      cluster (resolved_cluster, unnamed_clusters), it counts on its own as a GPU of no cluster;
    - is_claimed 1: no job claims it, and a job claims a named copy of its sample with the same readings (a host of
      the same name in two clusters held by a job of each at once leaves the copy naming none to neither,
      several_jobs_on_host, while its cluster's copy is its job's): it is that job's sample, delivered again without
      the cluster column, not GPU time no job claims nor a GPU of no cluster: int_unattributed_gpu_days and
      int_gpu_share_days leave it out.
    A copy with no named copy of its sample has no row. Few rows: only copies naming none, of samples also delivered
    naming a cluster; none when every copy names its cluster or none does (a join with an empty side). -#}
{% macro copy_verdicts(relation, unnamed, where=none) %}
    select
        unnamed.source_file,
        unnamed.source_line,
        min(case when {{ readings_differ('samples', 'unnamed') }} then 1 else 0 end) as is_other_gpu,
        max(case
            when coalesce(samples.attributed_job_key, '') = coalesce(unnamed.attributed_job_key, '')
                and not {{ readings_differ('samples', 'unnamed') }}
                then 1
            else 0
        end) as is_delivered_again,
        max(case
            when unnamed.attributed_job_key is null and samples.attributed_job_key is not null
                and not {{ readings_differ('samples', 'unnamed') }}
                then 1
            else 0
        end) as is_claimed
    from {{ relation }} as samples
    inner join {{ unnamed }} as unnamed
        on {{ sample_key_matches('samples', 'unnamed') }}
    where
        samples.cluster is not null
        {%- if where is not none %}
        and {{ where }}
        {%- endif %}
    group by unnamed.source_file, unnamed.source_line
{% endmacro %}

{#- CTE body: the GPUs (or instances) whose copies naming none that day, of a job (holder_key, '' for those no job
    claims), include a copy of a sample the same job's (or no job's) copy naming a cluster delivers with the same
    readings (copy_verdicts' is_delivered_again): evidence that the GPU's file was delivered again with the cluster
    column, without which gpu_clusters gives its copies naming none no cluster (a host of the same name in another
    cluster reporting at other instants is not this GPU). From ``unnamed`` (unnamed_copies) and ``verdicts``. -#}
{% macro delivered_again_gpus(unnamed='unnamed_copies', verdicts='copy_verdicts') %}
    select distinct
        coalesce(unnamed.attributed_job_key, '') as holder_key,
        unnamed.hostname,
        unnamed.gpu_index,
        unnamed.instance_key,
        cast({{ dbt.date_trunc('day', 'unnamed.sampled_at') }} as date) as sample_day
    from {{ unnamed }} as unnamed
    inner join {{ verdicts }} as verdicts
        on unnamed.source_file = verdicts.source_file
        and unnamed.source_line = verdicts.source_line
    where verdicts.is_delivered_again = 1
{% endmacro %}

{#- A left join of copy_verdicts (the CTE ``verdicts``) to ``samples``' copies, by file and line. -#}
{% macro join_copy_verdicts(samples, verdicts='copy_verdicts') %}
    left join {{ verdicts }}
        on {{ samples }}.source_file = {{ verdicts }}.source_file
        and {{ samples }}.source_line = {{ verdicts }}.source_line
{% endmacro %}

{#- The cluster of ``copies``' GPU: the cluster it names, else the first of ``candidates`` (the clusters the rules
    above resolve for it) that is known, unless ``other_gpu`` (copy_verdicts' is_other_gpu for it: null, 0 or 1) says
    it is another GPU than the named copies of its sample: that copy stays of no cluster. The one place the rule is
    said, in the three models. -#}
{% macro resolved_cluster(copies, candidates, other_gpu) -%}
    coalesce({{ copies }}.cluster, case when coalesce({{ other_gpu }}, 0) = 0
        then coalesce({{ candidates | join(', ') }}) end)
{%- endmacro %}

{#- CTE body: the copies naming no cluster among ``relation``'s rows (stg_telemetry__device_samples', read as
    ``unnamed``, where ``unnamed_where`` if given), each with every cluster whose copies of the same GPU (or MIG
    instance) of a host of that name at that instant (read as ``named``, where ``named_where`` if given) all
    measured something else (readings_differ): source_file, source_line, sampled_at, cluster. That cluster's GPU of
    that name is not the copy's: the copy is a host of the same name of another cluster (its file without the cluster
    column), and int_device_samples_attributed gives it to no job of that cluster (another_host_of_the_same_name),
    which would otherwise count a second GPU in the job's time. A copy whose readings agree with one copy naming the
    cluster (delivered again without the column) has no row for it, nor has a copy with no named copy of its
    instant. The job label is not compared: it names a job, not the GPU. Few rows: a join whose one side
    is the copies naming none (none when every file names its cluster), grouped. -#}
{% macro namesake_clusters(relation, unnamed_where=none, named_where=none) %}
    select
        unnamed.source_file,
        unnamed.source_line,
        unnamed.sampled_at,
        named.cluster
    from {{ relation }} as unnamed
    inner join {{ relation }} as named
        on unnamed.hostname = named.hostname
        and unnamed.gpu_index = named.gpu_index
        and coalesce(unnamed.gpu_instance_id, -1) = coalesce(named.gpu_instance_id, -1)
        and unnamed.sampled_at = named.sampled_at
    where
        unnamed.cluster is null
        and named.cluster is not null
        {%- if unnamed_where is not none %}
        and {{ unnamed_where }}
        {%- endif %}
        {%- if named_where is not none %}
        and {{ named_where }}
        {%- endif %}
    group by unnamed.source_file, unnamed.source_line, unnamed.sampled_at, named.cluster
    having min(case when {{ readings_differ('named', 'unnamed') }} then 1 else 0 end) = 1
{% endmacro %}
