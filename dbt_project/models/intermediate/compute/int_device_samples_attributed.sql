-- Every device sample with the job (job_key) it is attributed to, and how (R5). A sample whose job label names a
-- JobID or raw id belongs to the job that held that id at the sample time (held_by_alias: a JobID reused after a
-- controller reset or on another cluster names another job at another time), when one of that job's segments
-- (int_job_segments) holds the sample time: a Slurm job's [start, end), or for a job still running when its export
-- was written until the export saw it running (running_seen_at; a later sample is nobody's until a later export sees
-- the job run on or end); a Kubernetes job's each start to its run's next preempt, requeue or end. A sample in a gap
-- between a Kubernetes job's segments (preempted, not started again yet) is not its, whatever it names
-- (label_names_no_running_job): the job held no GPU then, and its occupied time, which its tiers measure, has no gap
-- in it; as a requeued Slurm job's incarnations are jobs of their own, with nothing between (docs/inputs.md). A label
-- that names no job running then and ends in -<digits> belongs, by
-- the same rule (held_by_alias, segments), to the Kubernetes job the label names without that suffix: the Job
-- controller names an Indexed Job's pods <job name>-<completion index>-<5 characters>, so its pods' labels say
-- train-b7-3 for Job train-b7 (macros/indexed_job_name.sql). A job running then under the label's own name keeps
-- it (a Job named train-3 keeps its samples), and no Slurm job is found so. The second join reads the index only
-- of the samples the first found no job for: it adds no scan, and when every label names its job no work per
-- sample but a null key. A sample without a job
-- label belongs to the Slurm allocation whose node list held its host at that time, when exactly one did (an
-- exclusive node) and it held whole GPUs: a MIG instance's sample, or a sample on the node of a job holding only a
-- share of a GPU (MIG instances, Slurm shards), needs its job label, since the node's other GPUs or instances may
-- be nobody's (fractional_gpu_without_job_label). So does a sample of an instant at which the host reported more
-- GPUs, labelled or not, than the job was allocated (a CPU-only job: none): which of them are the job's is not
-- known, and the others are idle time nobody holds (host_has_unallocated_gpus; host_job_key names that one job: a
-- job whose sacct record names no GPU, AccountingStorageTRES without gres/gpu, on a host whose GPUs worked then is
-- listed by the warn test jobs_allocated_no_gpu_beside_gpu_work). dcgm-exporter's job mapping labels
-- only the GPUs a job holds, so a host's unlabelled GPUs beside labelled ones are nobody's. The bound is the job's whole allocation,
-- not a share per host: Slurm may split a job's GPUs unevenly over its nodes, and a node list can name a node
-- without GPUs. Instants, not days or windows, so that a day's or a job's samples alone decide; an exporter that
-- stamps each GPU at another time is not caught by this rule. Every other sample is GPU time no job claims, with the reason:
-- fct_unattributed_gpu_hours shows it. Hosts match by short name (staging's hostname: node-01 and
-- node-01.cluster.example are one host).
-- A sample that names its cluster (staging's cluster) is a GPU of that cluster: two clusters may each have a gpu-01.
-- It matches only jobs of its cluster, or jobs that name none: by host, the jobs of its cluster or of none on that
-- host; by label, the job of its cluster that held the id then among that cluster's jobs (held_by_alias_in_cluster:
-- JobID 100 of cluster a and of cluster b run at once), else the job of no cluster that held it among those.
-- A sample without a cluster matches as before clusters were named: any job, by host and by label; but not a job of a
-- cluster whose copies of that GPU of a host of that name at that instant (gpu index, instance) all measured something
-- else (readings_differ, macros/gpu_clusters.sql: namesake_clusters): that cluster's host is not the copy's, which is a
-- host of the same name of another cluster whose file has no cluster column. Such a copy is GPU time no job claims,
-- of no cluster (another_host_of_the_same_name), not a second GPU in the job's time. A job of no cluster has no
-- copies of its cluster to compare: it keeps the copy.
-- A view: int_device_samples_tiered reads the attributed samples, fct_unattributed_gpu_hours the rest.
-- Written so that a filter on sampled_at (the days a model incremental by day builds again) reaches every scan of
-- the samples: each branch reads the staging view itself (a CTE read twice is materialized whole), and the
-- unlabelled samples' matches are grouped and joined back by their time too.
-- On Spark a table: Spark inlines a view into each of its reads, and int_gpu_share_days alone reads it three times
-- (docs/spark.md).
{{ config(materialized='table' if target.type == 'spark' else 'view') }}

-- One row per job and segment (int_job_segments): a sample is a job's only inside one of its segments. start_at and
-- occupied_until_at are the segment's bounds: a job still running (or preempted and not started again) holds its
-- GPUs until occupied_until_at, and a Kubernetes job none in the gaps between its segments.
with jobs as (
    select
        jobs.job_key,
        segments.segment_from as start_at,
        segments.segment_until as occupied_until_at,
        jobs.mig_instances_allocated > 0 or jobs.shards_allocated > 0 or jobs.mps_allocated > 0 as holds_gpu_share,
        jobs.gpus_allocated,
        jobs.scheduler,
        jobs.cluster
    from {{ ref('int_jobs_attributed') }} as jobs
    inner join {{ ref('int_job_segments') }} as segments on jobs.job_key = segments.job_key
),

-- Each id a label may name a job by, with each of the job's segments.
alias_jobs as (
    select
        job_aliases.alias_job_id,
        job_aliases.held_from,
        job_aliases.held_until,
        job_aliases.cluster,
        job_aliases.cluster_held_from,
        job_aliases.cluster_held_until,
        jobs.job_key,
        jobs.start_at,
        jobs.occupied_until_at,
        jobs.scheduler
    from {{ ref('int_job_aliases_resolved') }} as job_aliases
    inner join jobs on job_aliases.job_key = jobs.job_key
),

allocations as (
    select job_key, node_list
    from {{ ref('stg_scheduler__sacct_jobs') }}
    where record_type = 'allocation' and node_list is not null
),

-- The copies naming no cluster, each with the clusters that name the same GPU of a host of that name at its instant
-- and measured something else (namesake_clusters): one for each branch below, each reading the staging view itself,
-- so that a filter on sampled_at reaches both scans; the chunk's hosts only (every spelling of a host is in its chunk).
labelled_namesakes as (
    {{ namesake_clusters(
        ref('stg_telemetry__device_samples'),
        'unnamed.job_id is not null and ' ~ host_chunk_filter('unnamed.reported_hostname'),
        host_chunk_filter('named.reported_hostname')
    ) }}
),

unlabelled_namesakes as (
    {{ namesake_clusters(
        ref('stg_telemetry__device_samples'),
        'unnamed.job_id is null and ' ~ host_chunk_filter('unnamed.reported_hostname'),
        host_chunk_filter('named.reported_hostname')
    ) }}
),

allocation_hosts as (
    {{ expand_hostlist('allocations', ['job_key'], 'node_list') }}
),

-- The jobs that held each host, with their segments and GPUs (a job named twice by its node list counts once).
host_jobs as (
    select distinct
        {{ short_host('allocation_hosts.hostname') }} as hostname,
        jobs.cluster,
        jobs.job_key,
        jobs.start_at,
        jobs.occupied_until_at,
        jobs.holds_gpu_share,
        jobs.gpus_allocated
    from allocation_hosts
    inner join jobs on allocation_hosts.job_key = jobs.job_key
),

-- A labelled sample: one row per job its label names at its time (of its cluster, when it names one; else of no
-- cluster), else the Kubernetes job its label names less a completion index (an Indexed Job's pod), or one row
-- without a job when it names none running then (label_names_no_running_job), or when it names no cluster and that
-- job's cluster's copies of its GPU then measured something else (another_host_of_the_same_name).
labelled as (
    select
        samples.*,
        case
            when namesakes.cluster is null
                then coalesce(alias_jobs.job_key, unclustered_jobs.job_key, indexed_jobs.job_key)
        end as attributed_job_key,
        case
            when namesakes.cluster is not null then 'another_host_of_the_same_name'
            when coalesce(alias_jobs.job_key, unclustered_jobs.job_key, indexed_jobs.job_key) is not null
                then 'job_label'
            else 'label_names_no_running_job'
        end as attribution,
        cast(null as {{ dbt.type_string() }}) as host_job_key
    from {{ ref('stg_telemetry__device_samples') }} as samples
    left join alias_jobs
        on
            samples.job_id = alias_jobs.alias_job_id
            and case
                when samples.cluster is null then {{ held_by_alias('alias_jobs', 'samples.sampled_at') }}
                else alias_jobs.cluster = samples.cluster
                    and {{ held_by_alias_in_cluster('alias_jobs', 'samples.sampled_at') }}
            end
            and samples.sampled_at >= alias_jobs.start_at
            and samples.sampled_at < alias_jobs.occupied_until_at
    -- A sample of a cluster whose label names none of that cluster's jobs running then: a job that names no
    -- cluster (a null key joins nothing, so samples without a cluster never read it).
    left join alias_jobs as unclustered_jobs
        on
            case when alias_jobs.job_key is null and samples.cluster is not null then samples.job_id end
            = unclustered_jobs.alias_job_id
            and unclustered_jobs.cluster is null
            and {{ held_by_alias_in_cluster('unclustered_jobs', 'samples.sampled_at') }}
            and samples.sampled_at >= unclustered_jobs.start_at
            and samples.sampled_at < unclustered_jobs.occupied_until_at
    -- The index is read only when the label named no job running then (a null key joins nothing).
    left join alias_jobs as indexed_jobs
        on
            case
                when coalesce(alias_jobs.job_key, unclustered_jobs.job_key) is null
                    then {{ indexed_job_name('samples.job_id') }}
            end
            = indexed_jobs.alias_job_id
            and indexed_jobs.scheduler = 'kubernetes'
            and case
                when samples.cluster is null then {{ held_by_alias('indexed_jobs', 'samples.sampled_at') }}
                else (indexed_jobs.cluster = samples.cluster or indexed_jobs.cluster is null)
                    and {{ held_by_alias_in_cluster('indexed_jobs', 'samples.sampled_at') }}
            end
            and samples.sampled_at >= indexed_jobs.start_at
            and samples.sampled_at < indexed_jobs.occupied_until_at
    -- A copy naming no cluster, when its job's cluster names its GPU then with other readings (unclustered_jobs
    -- are read only for copies naming a cluster, which have no row here).
    left join labelled_namesakes as namesakes
        on samples.source_file = namesakes.source_file
        and samples.source_line = namesakes.source_line
        and samples.sampled_at = namesakes.sampled_at
        and coalesce(alias_jobs.cluster, indexed_jobs.cluster) = namesakes.cluster
    where samples.job_id is not null
),

unlabelled_matches as (
    select
        samples.source_file,
        samples.source_line,
        samples.sampled_at,
        samples.cluster,
        samples.hostname,
        count(host_jobs.job_key) as jobs_on_host,
        max(host_jobs.job_key) as only_job_key,
        max(host_jobs.cluster) as only_job_cluster,
        max(case when host_jobs.holds_gpu_share or samples.gpu_instance_id is not null then 1 else 0 end)
            as is_fractional,
        max(host_jobs.gpus_allocated) as gpus_allocated
    from {{ ref('stg_telemetry__device_samples') }} as samples
    left join host_jobs
        on samples.hostname = host_jobs.hostname
        -- A sample of a cluster is on its cluster's host: only jobs of that cluster, or of none, held it.
        and (samples.cluster is null or host_jobs.cluster is null or samples.cluster = host_jobs.cluster)
        and samples.sampled_at >= host_jobs.start_at
        and samples.sampled_at < host_jobs.occupied_until_at
    -- Only the chunk's hosts' samples, when a model is built a chunk of hosts at a time (macros/host_chunks.sql;
    -- otherwise every host): each row comes back to its own sample below, which the chunk keeps or not alike.
    where samples.job_id is null and {{ host_chunk_filter('samples.reported_hostname') }}
    group by
        samples.source_file, samples.source_line, samples.sampled_at, samples.cluster, samples.hostname
),

-- The GPUs each host reported, with a job label or without, at each instant it reported one without: only those
-- instants are counted, so labelled telemetry costs one scan that finds none. (Read from the staging view, not from
-- unlabelled_matches: a CTE read twice is materialized whole, and a filter on sampled_at would no longer reach it.)
-- The instants are the chunk's hosts'; the GPUs are counted over every name a host goes by (node-01 and
-- node-01.cluster.example, one short name in staging; a chunk holds every spelling of its hosts), of its cluster
-- only (gpu-01 of another cluster is another host).
unlabelled_instants as (
    select distinct
        cluster,
        hostname,
        sampled_at
    from {{ ref('stg_telemetry__device_samples') }}
    where job_id is null and {{ host_chunk_filter('reported_hostname') }}
),

host_instants as (
    select
        unlabelled_instants.cluster,
        unlabelled_instants.hostname,
        unlabelled_instants.sampled_at,
        count(distinct samples.gpu_index) as gpus_reported
    from {{ ref('stg_telemetry__device_samples') }} as samples
    inner join unlabelled_instants
        on samples.hostname = unlabelled_instants.hostname
        and samples.cluster is not distinct from unlabelled_instants.cluster
        and samples.sampled_at = unlabelled_instants.sampled_at
    group by unlabelled_instants.cluster, unlabelled_instants.hostname, unlabelled_instants.sampled_at
),

unlabelled_decided as (
    select
        unlabelled_matches.source_file,
        unlabelled_matches.source_line,
        unlabelled_matches.sampled_at,
        unlabelled_matches.only_job_key,
        case
            when unlabelled_matches.jobs_on_host = 0 then 'no_job_on_host'
            when unlabelled_matches.jobs_on_host > 1 then 'several_jobs_on_host'
            when namesakes.cluster is not null then 'another_host_of_the_same_name'
            when unlabelled_matches.is_fractional = 1 then 'fractional_gpu_without_job_label'
            when host_instants.gpus_reported > unlabelled_matches.gpus_allocated then 'host_has_unallocated_gpus'
            else 'host_and_time'
        end as attribution
    from unlabelled_matches
    left join host_instants
        on unlabelled_matches.hostname = host_instants.hostname
        and unlabelled_matches.cluster is not distinct from host_instants.cluster
        and unlabelled_matches.sampled_at = host_instants.sampled_at
    -- The one job's cluster names the copy's GPU then with other readings (a copy naming none only).
    left join unlabelled_namesakes as namesakes
        on unlabelled_matches.source_file = namesakes.source_file
        and unlabelled_matches.source_line = namesakes.source_line
        and unlabelled_matches.sampled_at = namesakes.sampled_at
        and unlabelled_matches.only_job_cluster = namesakes.cluster
)

select * from labelled

union all

select
    samples.*,
    case when unlabelled_decided.attribution = 'host_and_time' then unlabelled_decided.only_job_key end
        as attributed_job_key,
    unlabelled_decided.attribution,
    case when unlabelled_decided.attribution = 'host_has_unallocated_gpus' then unlabelled_decided.only_job_key end
        as host_job_key
from {{ ref('stg_telemetry__device_samples') }} as samples
inner join unlabelled_decided
    on samples.source_file = unlabelled_decided.source_file
    and samples.source_line = unlabelled_decided.source_line
    and samples.sampled_at = unlabelled_decided.sampled_at
