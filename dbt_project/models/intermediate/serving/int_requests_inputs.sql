-- What stg_serving__requests and int_requests_costed are built from tonight, one row per input, so that each builds
-- again only the months whose inputs changed (issue 15: a night pays for the new day's files, not for history;
-- macros/incremental_periods.sql, macros/request_months.sql). Inputs: each request log in raw (kind file: its bytes'
-- hash, rows staged, quarantined lines and loader, and the time its requests span, min to max requested_at: scanned
-- only for a file the last build did not read), each model-month's spend (kind model_month: the month and
-- int_model_months_costed's serving_cost_cents), and the contract's parameters and enumerations the models read
-- (kind contract). A request's month is fixed by its requested_at, part of its record key: every delivery of a
-- request lies in its month, so a month whose files, held rows and spend are unchanged has the rows a full build
-- gives. A file retracted (cost-pipeline retract), held from after a failed dbt test (its rows staged and
-- quarantine lines change), released, changed or gone builds again the months it spans (the span it had, and has).
{%- set state = load_relation(kept_inputs('int_requests_costed')) if execute else none %}
{#- The loader each file was read with (cost_pipeline/ingest/lib/reuse.py): another loader (its code, the contract,
    the raw table's columns) reads the same bytes into other rows. Bookkeeping of the ingest, not a dbt source. -#}
{%- set loaders = adapter.get_relation(this.database, 'ops', 'loaded_files') if execute else none %}
{#- A value as text for a fingerprint: null as the empty text, so that one null does not make the whole hash null. -#}
{%- set text = "coalesce(cast({} as " ~ dbt.type_string() ~ "), '')" %}

with quarantined as (
    select
        source_file,
        file_sha256,
        {%- set line = dbt.concat([text.format('line'), "':'", 'rule']) %}
        {{ ordered_listagg(line, "','", line) }} as lines
    from {{ source('raw', 'quarantine') }}
    where source = 'serving_requests'
    group by source_file, file_sha256
),

retracted as (
    select distinct source_file, file_sha256
    from {{ source('raw', 'retractions') }}
    where source = 'serving_requests'
),

files as (
    select
        {{ dbt.concat(["'serving_requests/'", 'files.source_file']) }} as item,
        files.source_file,
        files.file_sha256,
        {{ dbt.hash(dbt.concat([
            'files.file_sha256', "':'", text.format('files.rows_staged'), "':'", "coalesce(quarantined.lines, '')",
            "':'", text.format('loaders.loader_sha256' if loaders is not none else 'null')
        ])) }} as fingerprint
    from {{ source('raw', 'ingested_files') }} as files
    left join quarantined
        on files.source_file = quarantined.source_file
        and files.file_sha256 = quarantined.file_sha256
    left join retracted
        on files.source_file = retracted.source_file
        and files.file_sha256 = retracted.file_sha256
    {%- if loaders is not none %}
    left join {{ loaders }} as loaders
        on files.source = loaders.source
        and files.source_file = loaders.source_file
        and files.file_sha256 = loaders.file_sha256
    {%- endif %}
    where
        files.source = 'serving_requests'
        and files.rows_staged > 0
        and retracted.source_file is null
),

built as (
    {{ built_inputs(state) }}
),

-- Files whose rows the last build did not read: only their requests are scanned, for the time they span.
new_files as (
    select files.item, files.source_file, files.file_sha256
    from files
    left join built on built.kind = 'file' and files.item = built.item and files.fingerprint = built.fingerprint
    where built.item is null
),

new_spans as (
    select
        new_files.item,
        min(requests.requested_at) as span_start,
        max(requests.requested_at) as span_end
    from {{ source('raw', 'serving_requests') }} as requests
    inner join new_files
        on requests.source_file = new_files.source_file
        and requests.file_sha256 = new_files.file_sha256
    group by new_files.item
),

-- Each model-month's spend C, shared over its requests (R13): another C builds that month again.
model_months as (
    select
        {{ dbt.concat([text.format('month_start'), "'/'", 'model']) }} as item,
        {{ dbt.hash(text.format('serving_cost_cents')) }} as fingerprint,
        cast(month_start as {{ dbt.type_timestamp() }}) as span_start,
        cast(month_start as {{ dbt.type_timestamp() }}) as span_end
    from {{ ref('int_model_months_costed') }}
),

-- The contract's allocation key, its request codes and buckets, and its newest version (the one requests are costed
-- under): another builds every month again.
contract as (
    {%- set parameter = dbt.concat([
        'contract_version', "'/'", 'parameter_name', "'='", text.format('parameter_value')
    ]) %}
    select
        'parameters' as item,
        {{ dbt.hash(ordered_listagg(parameter, "','", parameter)) }} as fingerprint
    from {{ ref('stg_contract__parameters') }}
    where parameter_name in (
        'serving_input_token_weight', 'serving_output_token_weight', 'serving_allocation_by_tokens'
    )
),

enumerations as (
    {%- set code = dbt.concat([
        'contract_version', "'/'", 'enumeration', "'/'", 'code', "'='", text.format('category'), "'/'",
        text.format('lower_bound'), "'-'", text.format('upper_bound')
    ]) %}
    select
        'enumerations' as item,
        {{ dbt.hash(ordered_listagg(code, "','", code)) }} as fingerprint
    from {{ ref('stg_contract__enumerations') }}
    where enumeration in ('request_status', 'input_bucket', 'output_bucket', 'latency_tier')
),

current_inputs as (
    {{ file_inputs('files', 'new_spans', 'built') }}
    union all
    select 'model_month' as kind, item, fingerprint, span_start, span_end from model_months
    union all
    select 'contract' as kind, item, fingerprint, null as span_start, null as span_end from contract
    union all
    select 'contract' as kind, item, fingerprint, null as span_start, null as span_end from enumerations
    union all
    select
        'contract' as kind,
        'latest_version' as item,
        {{ latest_contract_version() }} as fingerprint,
        null as span_start,
        null as span_end
)

select
    kind,
    item,
    fingerprint,
    span_start,
    span_end,
    -- The dbt invocation that built this table: the request models trust it only from their own run.
    '{{ invocation_id }}' as built_by
from current_inputs
