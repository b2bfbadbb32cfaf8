-- What int_device_samples_tiered and int_gpu_share_days are built from tonight, and which jobs' rows the tier table
-- builds again (issue 15: a night pays for the new day's files, not for history). One row per input: each telemetry
-- file in raw (kind file: its bytes' hash, rows staged and rows quarantined, and the time its samples span), each
-- job that has occupied its GPUs (kind job: what attributes samples to it and prices its window, start_at to
-- occupied_until_at, and its segments inside it; a job still running has its window so far, which grows night by
-- night: its fingerprint holds occupied_until_at, so a night that sees it run longer, or end, builds it again), the
-- contract's parameters and enumerations (kind contract) and the tier table's code (kind code). Each model keeps the
-- inputs of its last build beside it (macros/incremental_periods.sql); the tables by day compare them themselves
-- (macros/sample_days.sql).
-- A job's rows are built again (rebuild) when it is new or changed, when a file that is new, changed or gone spans
-- its window, or when a job new, changed or gone overlaps its window in time (a sample without a job label belongs
-- to the one job on its host: another job there takes it away); every job when the contract or the code changed,
-- or nothing was built yet. A job's samples all lie in its window, and so do the other labels of a GPU it shares
-- (which split that GPU's time with it, int_device_samples_tiered): they are in the files that span its window, and
-- a new, changed or gone one builds it again. Building a job again gives what a full build gives.
{%- set state = load_relation(device_samples_tiered_state()) if execute else none %}
{#- The loader each file was read with (cost_pipeline/ingest/lib/reuse.py): another loader (its code, the contract,
    the raw table's columns) reads the same bytes into other rows. Bookkeeping of the ingest, not a dbt source. -#}
{%- set loaders = adapter.get_relation(this.database, 'ops', 'loaded_files') if execute else none %}
{#- The staging view's SQL, which gives the samples their times: a file's span (kept from the last build) holds
    only under the same SQL, so another SQL makes every file new and scanned again. -#}
{%- set staging_code = local_md5(graph.nodes['model.cost_pipeline.stg_telemetry__device_samples'].raw_code)
    if execute else '' %}
{#- A value as text for a fingerprint: null as the empty text, so that one null does not make the whole hash null. -#}
{%- set text = "coalesce(cast({} as " ~ dbt.type_string() ~ "), '')" %}

with quarantined as (
    select
        source,
        source_file,
        file_sha256,
        {%- set line = dbt.concat([text.format('line'), "':'", 'rule']) %}
        {{ ordered_listagg(line, "','", line) }} as lines
    from {{ source('raw', 'quarantine') }}
    group by source, source_file, file_sha256
),

files as (
    select
        {{ dbt.concat(['files.source', "'/'", 'files.source_file']) }} as item,
        files.source_file,
        {{ dbt.hash(dbt.concat([
            'files.file_sha256', "':'", text.format('files.rows_staged'), "':'", "coalesce(quarantined.lines, '')",
            "':'", text.format('loaders.loader_sha256' if loaders is not none else 'null'), "':'",
            "'" ~ staging_code ~ "'"
        ])) }} as fingerprint
    from {{ source('raw', 'ingested_files') }} as files
    left join quarantined
        on files.source = quarantined.source
        and files.source_file = quarantined.source_file
        and files.file_sha256 = quarantined.file_sha256
    {%- if loaders is not none %}
    left join {{ loaders }} as loaders
        on files.source = loaders.source
        and files.source_file = loaders.source_file
        and files.file_sha256 = loaders.file_sha256
    {%- endif %}
    where
        files.source in ('device_samples', 'device_samples_dcgm', 'device_samples_prometheus')
        and files.rows_staged > 0
),

aliases as (
    select
        job_key,
        {#- The id as held among every job (a sample without a cluster) and among its cluster's (one with). -#}
        {%- set held = dbt.concat([
            'alias_job_id', "'@'", text.format('held_from'), "'-'", text.format('held_until'), "'@'",
            text.format('cluster_held_from'), "'-'", text.format('cluster_held_until')
        ]) %}
        {{ ordered_listagg(held, "','", held) }} as held
    from {{ ref('int_job_aliases_resolved') }}
    group by job_key
),

node_lists as (
    select job_key, {{ ordered_listagg('node_list', "','", 'node_list') }} as node_lists
    from {{ ref('stg_scheduler__sacct_jobs') }}
    where record_type = 'allocation' and node_list is not null
    group by job_key
),

-- A job's segments (int_job_segments): a Kubernetes job's samples are its own only inside them, so a preemption or
-- a start exported late (its start, end and occupied_until_at the same) changes which samples are its.
segments as (
    select
        job_key,
        {%- set segment = dbt.concat([text.format('segment_from'), "'-'", text.format('segment_until')]) %}
        {{ ordered_listagg(segment, "','", segment) }} as segments
    from {{ ref('int_job_segments') }}
    group by job_key
),

jobs as (
    select
        jobs.job_key as item,
        {{ dbt.hash(dbt.concat([
            text.format('jobs.start_at'), "'|'", text.format('jobs.end_at'), "'|'",
            text.format('jobs.occupied_until_at'), "'|'",
            text.format('jobs.contract_version'), "'|'", text.format('jobs.cluster'), "'|'",
            text.format('jobs.mig_instances_allocated'), "'|'", text.format('jobs.shards_allocated'), "'|'",
            text.format('jobs.mps_allocated'), "'|'", text.format('jobs.gpus_allocated'), "'|'",
            "coalesce(aliases.held, '')", "'|'",
            "coalesce(node_lists.node_lists, '')", "'|'",
            "coalesce(segments.segments, '')"
        ])) }} as fingerprint,
        jobs.start_at as span_start,
        jobs.occupied_until_at as span_end
    from {{ ref('int_jobs_attributed') }} as jobs
    left join aliases on jobs.job_key = aliases.job_key
    left join node_lists on jobs.job_key = node_lists.job_key
    left join segments on jobs.job_key = segments.job_key
    where jobs.start_at is not null and jobs.occupied_until_at is not null
),

-- Every parameter of the contract (a change to one the tier rule does not read builds every job again all the same).
contract as (
    {%- set parameter = dbt.concat([
        'contract_version', "'/'", 'parameter_name', "'='", text.format('parameter_value')
    ]) %}
    select
        'contract' as item,
        {{ dbt.hash(ordered_listagg(parameter, "','", parameter)) }} as fingerprint
    from {{ ref('stg_contract__parameters') }}
),

-- Every code of the contract's enumerations: the utilization tiers, the shared-GPU rule, and the rest.
enumerations as (
    {%- set code = dbt.concat([
        'contract_version', "'/'", 'enumeration', "'/'", 'code', "'='", text.format('lower_bound')
    ]) %}
    select
        'enumerations' as item,
        {{ dbt.hash(ordered_listagg(code, "','", code)) }} as fingerprint
    from {{ ref('stg_contract__enumerations') }}
),

built as (
    {{ built_inputs(state) }}
),

-- Files whose rows the last build did not read: only their samples are scanned, for the time they span.
new_files as (
    select files.item, files.source_file
    from files
    left join built on built.kind = 'file' and files.item = built.item and files.fingerprint = built.fingerprint
    where built.item is null
),

new_spans as (
    select
        new_files.item,
        min(samples.sampled_at) as span_start,
        max(samples.sampled_at) as span_end
    from {{ ref('stg_telemetry__device_samples') }} as samples
    inner join new_files on samples.source_file = new_files.source_file
    group by new_files.item
),

current_inputs as (
    {{ file_inputs('files', 'new_spans', 'built') }}
    union all
    select 'job' as kind, item, fingerprint, span_start, span_end from jobs
    union all
    select 'contract' as kind, item, fingerprint, null as span_start, null as span_end from contract
    union all
    select 'contract' as kind, item, fingerprint, null as span_start, null as span_end from enumerations
    union all
    select
        'code' as kind,
        'code' as item,
        '{{ device_samples_tiered_code() }}' as fingerprint,
        null as span_start,
        null as span_end
),

-- The time spans whose samples or jobs changed since the last build: new and changed inputs (tonight's span),
-- changed and gone ones (the span they had).
changed_spans as (
    select kind, span_start, span_end
    from (
        {{ changed_inputs('current_inputs', 'built') }}
    ) as changed
    where kind in ('file', 'job')
),

-- Everything is built again when the tier rule, the code or nothing was built before.
everything as (
    select count(*) as unchanged
    from current_inputs
    inner join built
        on current_inputs.kind = built.kind
        and current_inputs.item = built.item
        and current_inputs.fingerprint = built.fingerprint
    where current_inputs.kind in ('contract', 'code')
),

-- The jobs whose window overlaps a changed span.
overlapping as (
    select current_inputs.item
    from current_inputs
    inner join changed_spans
        on
            current_inputs.kind = 'job'
            and changed_spans.span_start <= current_inputs.span_end
            and changed_spans.span_end >= current_inputs.span_start
    group by current_inputs.item
)

select
    current_inputs.kind,
    current_inputs.item,
    current_inputs.fingerprint,
    current_inputs.span_start,
    current_inputs.span_end,
    current_inputs.kind = 'job' and (everything.unchanged < 3 or overlapping.item is not null) as rebuild,
    -- The dbt invocation that built this table: int_device_samples_tiered trusts it only from its own run.
    '{{ invocation_id }}' as built_by
from current_inputs
cross join everything
left join overlapping on current_inputs.kind = 'job' and current_inputs.item = overlapping.item
