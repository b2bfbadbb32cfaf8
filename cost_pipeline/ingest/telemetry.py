"""Telemetry (I2): DCGM device samples, file -> DuckDB directly, validated inside the database.

Three formats, each a source of its own, all staged into one shape (``stg_telemetry__device_samples``):

- the wide CSV/Parquet (``device_samples``), the documented normalised format: one row per GPU and instant;
- dcgm-exporter scrapes (``device_samples_dcgm``, ``*.prom``): the Prometheus text exposition format as
  ``curl localhost:9400/metrics`` returns it, one file per scrape or many appended;
- Prometheus/Thanos range queries (``device_samples_prometheus``, ``*.json``): the ``/api/v1/query_range``
  response, one series per metric and GPU; one file may hold several metrics.

The last two hold one value per metric, GPU and instant; ``lib/metric_series.py`` pivots them into the wide shape.
Each may name the cluster the host is in (a ``cluster`` label, as Prometheus adds it; a ``cluster`` column of the
wide format): two clusters' gpu-01 are two hosts. Absent or blank, it is null.

A 5,120-GPU cluster at 1 Hz writes 442 million rows a day, so samples never pass through pandas. They load
through the shared in-database path (``in_database.py``): each file is read as text into a temporary table
(DuckDB's reject store catches structurally broken lines with their line numbers), every value is cast with
``try_cast``, and the first contract rule a row breaks sends it to ``raw.quarantine``; the same conservation
rows in = staged + quarantined holds. A file whose bytes repeat an earlier telemetry file's is not read at all;
the ledger records it as a duplicate.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import duckdb

from cost_pipeline.contract import Contract, load_contract
from cost_pipeline.contract.schemas import (
    DEVICE_SAMPLE_COLUMNS,
    DEVICE_SAMPLE_DOMAINS,
    DEVICE_SAMPLE_OPTIONAL,
    Domain,
    device_sample_domains,
)
from cost_pipeline.ingest.lib import whole_ids
from cost_pipeline.ingest.lib.in_database import (
    InDatabaseSource,
    Rule,
    domain_rules,
    file_position,
    first_line,
    stage_csv,
    stage_csv_files,
    stage_parquet,
    trimmed_sql,
)
from cost_pipeline.ingest.lib.metric_series import job_from_labels, line_rules, pivot, presence_rules
from cost_pipeline.ingest.lib.records import FileRejected, Rejection
from cost_pipeline.ingest.lib.source import Source, batch_lineage
from cost_pipeline.ingest.lib.timestamps import landing_time_sql
from cost_pipeline.ingest.lib.warehouse import IngestReport, file_pattern, quote

_PROFILE = trimmed_sql("cast(gpu_instance_profile as varchar)")
# A job label may arrive as a number (2003.0 for job 2003): read as its id, a fraction quarantined
# (``job_id.whole_number``), by the rule every source's id columns share (lib/whole_ids.py).
_ID_COLUMNS = ("job_id",)
_text_sql = whole_ids.text_sql
_ID_RULES: list[Rule] = [whole_ids.id_rule(name) for name in _ID_COLUMNS]


def _sample_rules(domains: Mapping[str, Domain]) -> list[Rule]:
    """(rule, condition that breaks it, message); evaluated in order, the first broken rule is recorded. The numeric
    columns' rules come from their domains (schemas.device_sample_domains: the power draw's bound is the contract's
    energy.max_gpu_power_watts), declared once for every telemetry format."""
    return [
        (
            "timestamp.parseable",
            'try_cast("timestamp" as timestamp) is null',
            "timestamp is missing or not a timestamp",
        ),
        ("hostname.present", f"nullif({trimmed_sql('hostname')}, '') is null", "hostname is empty"),
        *_ID_RULES,
        *domain_rules(domains, DEVICE_SAMPLE_OPTIONAL),
        *_MIG_RULES,
    ]


_MIG_RULES: list[Rule] = [
    # A MIG instance names its profile by its compute slices first (docs/fractional_gpus.md): 1g.10gb, 3g.40gb.
    (
        "gpu_instance_profile.format",
        f"not regexp_full_match(coalesce({_PROFILE}, '1g.'), '[1-9][0-9]*g[.].*')",
        "gpu_instance_profile should be a MIG profile such as 3g.40gb (compute slices, g., memory)",
    ),
    (
        "gpu_instance.paired",
        f"(nullif({trimmed_sql('cast(gpu_instance_id as varchar)')}, '') is null) <> (nullif({_PROFILE}, '') is null)",
        "gpu_instance_id and gpu_instance_profile (GPU_I_ID, GPU_I_PROFILE) are given together or not at all",
    ),
]
_RULES = _sample_rules(DEVICE_SAMPLE_DOMAINS)


def _under_contract(*leading: Rule) -> Callable[[InDatabaseSource, Contract, Path], InDatabaseSource]:
    """A telemetry source as it loads under one contract: its format's own rules (``leading``), then the samples'
    rules with the contract's bound on a GPU's power draw (a reading in milliwatts is quarantined, never priced)."""

    def bound(source: InDatabaseSource, contract: Contract, _landing_dir: Path) -> InDatabaseSource:
        domains = device_sample_domains(contract.max_gpu_power_watts)
        # Bound no further: the rules carry the contract's bound into the loader's fingerprint (reuse.loader_sha256),
        # so a file loaded under the same bound is not read again, and one loaded under another bound is.
        rules = [*leading, *_sample_rules(domains)]
        return dataclasses.replace(source, rules=rules, domains=domains, bound=None)

    return bound


_REQUIRED = [name for name, _ in DEVICE_SAMPLE_COLUMNS if name not in DEVICE_SAMPLE_OPTIONAL]


def _typed_select() -> str:
    casts = []
    for name, sql_type in DEVICE_SAMPLE_COLUMNS:
        if name in _ID_COLUMNS:
            expr = whole_ids.id_sql(name)
        elif sql_type == "VARCHAR":
            expr = _text_sql(name)
        else:
            expr = f"try_cast({quote(name)} as {sql_type})"
        casts.append(f"{expr} as {quote(name)}")
    return ", ".join(casts)


def _require(present: Iterable[str]) -> None:
    names = set(present)
    missing = [c for c in _REQUIRED if c not in names]
    if missing:
        raise FileRejected("file_format", f"header lacks required column(s): {', '.join(missing)}")


def _sample_column(name: str, present: dict[str, str]) -> str:
    if name not in present:
        return f"cast(null as varchar) as {quote(name)}"
    if name == "timestamp":  # naive UTC: an offset honoured, a number refused (the contract names no unit)
        return f"{landing_time_sql(quote(name), present[name])} as {quote(name)}"
    return quote(name)


def _sample_columns(present: dict[str, str]) -> str:
    """The sample columns, by the names DuckDB gave them; an absent optional column is null."""
    _require(present)
    return ", ".join(_sample_column(name, present) for name, _ in DEVICE_SAMPLE_COLUMNS)


def _stage(con: duckdb.DuckDBPyConnection, path: Path, blank_lines: list[int]) -> list[Rejection]:
    if path.suffix == ".parquet":
        stage_parquet(con, path, _sample_columns)
        return []
    _required_header(path)  # before DuckDB reads the file
    return stage_csv(con, path, _sample_columns, blank_lines, what="sample")


def _required_header(path: Path) -> str:
    """A CSV file's header line; ``FileRejected`` when it lacks a required column."""
    header = first_line(path)
    _require(h.strip().strip('"') for h in header.split(","))
    return header


def _stage_group(con: duckdb.DuckDBPyConnection, files: Sequence[tuple[Path, list[int]]]) -> list[list[Rejection]]:
    """Small CSV files with the same header line (``_header``) staged by one read."""
    return stage_csv_files(con, files, _sample_columns, what="sample")


def _header(path: Path) -> str | None:
    """A CSV file's header line: it is read together with the files that have the same one. A Parquet file, and
    one that ``_stage`` rejects whole for its header, is read alone."""
    if path.suffix == ".parquet":
        return None
    try:
        return _required_header(path)
    except FileRejected:
        return None


# A sample fed the batch of the job it was attributed to; every telemetry source ends in the same relations.
SAMPLE_BATCHES = batch_lineage(
    "intermediate.int_device_samples_attributed",
    batch="jobs.batch_id",
    joined="inner join intermediate.int_jobs_attributed as jobs on lineage.attributed_job_key = jobs.job_key",
)

DEVICE_SAMPLES = Source(
    "device_samples",
    ("I2",),
    "telemetry",
    ("*.csv", "*.parquet"),
    "Per-GPU DCGM samples",
    InDatabaseSource(
        DEVICE_SAMPLE_COLUMNS,
        _typed_select(),
        _RULES,
        _stage,
        domains=DEVICE_SAMPLE_DOMAINS,
        bound=_under_contract(),
        stage_group=_stage_group,
        group_key=_header,
    ),
    batch_lineage=SAMPLE_BATCHES,
    rows_stand_alone=True,
)

# --- dcgm-exporter scrapes: the Prometheus text exposition format -------------------------------------------------
# A sample line: name, optional {labels}, value, optional timestamp in milliseconds since the epoch.
# Label names as dcgm-exporter writes them may hold a hyphen (its render test writes test-uuid="...").
_SAMPLE_LINE = (
    r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*"
    r'(\{(?:\s*[a-zA-Z_][a-zA-Z0-9_-]*\s*=\s*"(?:[^"\\]|\\.)*"\s*,?)*\s*\})?'
    r"\s+(\S+)(\s+(-?[0-9]+))?\s*$"
)
# The scrape time a file's name gives, for lines without their own: 2026-11-30T12-00-05Z, 2026-11-30T12:00:05Z or
# 20261130T120005Z (UTC). A file's modification time is not used: a copy or a sync rewrites it.
_NAME_TIME = re.compile(r"(\d{4})-?(\d{2})-?(\d{2})T(\d{2})[-:]?(\d{2})[-:]?(\d{2})Z", re.ASCII)
_EXPOSITION_RULES = line_rules(
    [
        (
            "exposition.line",
            "line is not a metric sample such as "
            'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",hostname="node-01",hpc_job="1234"} 0.93 1796032800000',
        ),
        (
            "exposition.timestamp",
            "sample has no timestamp (milliseconds after the value) and the file name gives no scrape time "
            "such as node-01_2026-11-30T12-00-05Z.prom",
        ),
        ("exposition.value", "value is not a number such as 0.93"),
        (
            "exposition.repeated",
            "metric repeats for this GPU and instant (scrapes appended without their timestamps?)",
        ),
    ]
)


def file_name_time(path: Path) -> str | None:
    """The UTC scrape time in a file's name (``node-01_2026-11-30T12-00-05Z.prom``), as ISO text; None: none."""
    found = _NAME_TIME.search(path.name)
    if found is None:
        return None
    year, month, day, hour, minute, second = found.groups()
    return f"{year}-{month}-{day} {hour}:{minute}:{second}"


def _label(name: str) -> str:
    """A label's value from the ``labels`` text (``{a="1", b="2"}``); null when absent or empty."""
    return f"""nullif(regexp_extract(labels, '[{{,]\\s*{name}="([^"]*)"', 1), '')"""


def _stage_exposition(con: duckdb.DuckDBPyConnection, path: Path, blank_lines: list[int]) -> list[Rejection]:
    """A scrape file -> ``landing_series``, one row per sample line (comments and empty lines are not rows)."""
    return _stage_expositions(con, [(path, blank_lines)])[0]


def _stage_expositions(
    con: duckdb.DuckDBPyConnection, files: Sequence[tuple[Path, list[int]]]
) -> list[list[Rejection]]:
    """Scrape files -> ``landing_series``, one row per sample line, each with its file's position in ``files``
    (``landing_file``); then pivoted (``pivot``). A line's scrape time, when it has none, is its file name's."""
    paths = [file_pattern(path) for path, _ in files]
    name_time = "cast(list_extract(?::varchar[], landing_file + 1) as varchar)"
    con.execute(
        f"""
        create or replace temp table landing_series as
        with text_lines as (
            select landing_file, unnest(lines) as text, unnest(generate_series(1, len(lines))) as line
            from (
                select {file_position(len(files))} as landing_file,
                       string_split(replace(content, chr(13), ''), chr(10)) as lines
                from read_text(?)
            )
        ), samples as (
            select landing_file, line, regexp_full_match(text, '{_SAMPLE_LINE}') as well_formed,
                   regexp_extract(text, '{_SAMPLE_LINE}', 1) as metric,
                   coalesce(regexp_extract(text, '{_SAMPLE_LINE}', 2), '') as labels,
                   regexp_extract(text, '{_SAMPLE_LINE}', 3) as value,
                   nullif(regexp_extract(text, '{_SAMPLE_LINE}', 5), '') as milliseconds
            from (select *, {trimmed_sql("text")} as trimmed from text_lines)
            where trimmed <> '' and not starts_with(trimmed, '#')
        )
        select landing_file, line, metric, value,
               coalesce(cast(make_timestamp(try_cast(milliseconds as bigint) * 1000) as varchar),
                        {name_time}) as "timestamp",
               {_label("cluster")} as cluster,
               coalesce({_label("hostname")}, {_label("Hostname")}) as hostname,
               {_label("gpu")} as gpu,
               {_label("GPU_I_ID")} as gpu_instance_id,
               {_label("GPU_I_PROFILE")} as gpu_instance_profile,
               {job_from_labels(_label)} as job_id,
               case when not well_formed then 'exposition.line'
                    when milliseconds is null and {name_time} is null then 'exposition.timestamp'
                    when try_cast(value as double) is null then 'exposition.value' end as line_rule
        from samples
        """,
        [*([] if len(files) == 1 else [paths]), paths, *[[file_name_time(path) for path, _ in files]] * 2],
    )
    pivot(con, "exposition.repeated")
    return [[] for _ in files]


DCGM_SCRAPES = Source(
    "device_samples_dcgm",
    ("I2",),
    "telemetry",
    ("*.prom",),
    "dcgm-exporter scrapes (Prometheus text exposition), pivoted to one row per GPU and instant",
    InDatabaseSource(
        DEVICE_SAMPLE_COLUMNS,
        _typed_select(),
        [*_EXPOSITION_RULES, *presence_rules(), *_RULES],
        _stage_exposition,
        domains=DEVICE_SAMPLE_DOMAINS,
        bound=_under_contract(*_EXPOSITION_RULES, *presence_rules()),
        # Two scrapes may hold the same bytes (an idle node, no timestamps): the time in the name tells them apart.
        identity=lambda path: file_name_time(path) or "",
        parquet=False,
        stage_group=_stage_expositions,
        group_key=lambda _path: "exposition",
    ),
    text_format="Prometheus text exposition",
    batch_lineage=SAMPLE_BATCHES,
    rows_stand_alone=True,
)

# --- Prometheus / Thanos /api/v1/query_range responses -------------------------------------------------------------
_RANGE_RULES = line_rules(
    [
        ("range_query.timestamp", "sample time is not a Unix time in seconds such as 1796032800.5"),
        ("range_query.value", 'value is not a number such as "0.93"'),
        ("range_query.repeated", "metric repeats for this GPU and instant (two series with the same GPU labels?)"),
    ]
)


def _stage_range_query(con: duckdb.DuckDBPyConnection, path: Path, _blank_lines: list[int]) -> list[Rejection]:
    """A range-query response -> ``landing_series``: each value of each series a record, numbered in file order."""
    con.execute(
        "create or replace temp table landing_text as select try_cast(content as json) as body from read_text(?)",
        [file_pattern(path)],
    )
    [(status, result_type, series)] = con.execute(
        "select body->>'status', body->'data'->>'resultType', json_array_length(body->'data'->'result') "
        "from landing_text"
    ).fetchall()
    if status != "success" or result_type != "matrix" or series is None:
        raise FileRejected(
            "range_query.response",
            'file is not a Prometheus range-query response such as {"status": "success", "data": '
            '{"resultType": "matrix", "result": [...]}}',
        )
    metric = "series->'metric'"
    con.execute(f"""
        create or replace temp table landing_series as
        with series as (
            select unnest(items) as series, unnest(generate_series(1, len(items))) as position
            from (select cast(body->'data'->'result' as json[]) as items from landing_text)
        ), numbered as (
            select *, coalesce(sum(len(pairs)) over (order by position rows between unbounded preceding
                                                      and 1 preceding), 0) as before
            from (select *, cast(series->'values' as json[]) as pairs from series)
        ), pairs as (
            select {metric}->>'__name__' as metric,
                   nullif({metric}->>'cluster', '') as cluster,
                   coalesce({metric}->>'hostname', {metric}->>'Hostname') as hostname,
                   {metric}->>'gpu' as gpu,
                   {metric}->>'GPU_I_ID' as gpu_instance_id,
                   {metric}->>'GPU_I_PROFILE' as gpu_instance_profile,
                   {job_from_labels(lambda name: f"{metric}->>'{name}'")} as job_id,
                   before, unnest(pairs) as pair, unnest(generate_series(1, len(pairs))) as at_position
            from numbered
        )
        select 0 as landing_file, cast(before + at_position as bigint) as line, metric, pair->>1 as value,
               cluster, hostname, gpu,
               gpu_instance_id, gpu_instance_profile, job_id,
               cast(make_timestamp(cast(round(try_cast(pair->>0 as double) * 1000000) as bigint)) as varchar)
                   as "timestamp",
               case when try_cast(pair->>0 as double) is null then 'range_query.timestamp'
                    when try_cast(pair->>1 as double) is null then 'range_query.value' end as line_rule
        from pairs
    """)
    con.execute("drop table if exists landing_text")
    pivot(con, "range_query.repeated")
    return []


PROMETHEUS_RANGES = Source(
    "device_samples_prometheus",
    ("I2",),
    "telemetry",
    ("*.json",),
    "Prometheus/Thanos range-query responses (/api/v1/query_range), pivoted to one row per GPU and instant",
    InDatabaseSource(
        DEVICE_SAMPLE_COLUMNS,
        _typed_select(),
        [*_RANGE_RULES, *presence_rules(), *_RULES],
        _stage_range_query,
        domains=DEVICE_SAMPLE_DOMAINS,
        bound=_under_contract(*_RANGE_RULES, *presence_rules()),
        parquet=False,
    ),
    batch_lineage=SAMPLE_BATCHES,
    rows_stand_alone=True,
)
SOURCES = (DEVICE_SAMPLES, DCGM_SCRAPES, PROMETHEUS_RANGES)


def load_device_samples(con: duckdb.DuckDBPyConnection, landing_dir: Path) -> IngestReport:
    """Replace ``raw.device_samples`` from every telemetry file, quarantining what breaks the contract."""
    return DEVICE_SAMPLES.load(con, landing_dir, load_contract(), None)
