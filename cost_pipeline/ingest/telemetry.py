"""Telemetry (I2): DCGM device samples, file -> DuckDB directly, validated inside the database.

A 5,120-GPU cluster at 1 Hz writes 442 million rows a day, so samples never pass through pandas. They load
through the shared in-database path (``in_database.py``): each file is read as text into a temporary table
(DuckDB's reject store catches structurally broken lines with their line numbers), every value is cast with
``try_cast``, and the first contract rule a row breaks sends it to ``raw.quarantine``; the same conservation
rows in = staged + quarantined holds. A file whose bytes repeat an earlier telemetry file's is not read at all;
the ledger records it as a duplicate.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import duckdb

from cost_pipeline.contract.schemas import DEVICE_SAMPLE_COLUMNS, DEVICE_SAMPLE_DOMAINS, DEVICE_SAMPLE_OPTIONAL
from cost_pipeline.ingest.lib.in_database import (
    InDatabaseSource,
    Rule,
    domain_rules,
    first_line,
    load_in_database,
    stage_csv,
    stage_parquet,
)
from cost_pipeline.ingest.lib.records import FileRejected, Rejection
from cost_pipeline.ingest.lib.source import Source
from cost_pipeline.ingest.lib.timestamps import landing_time_sql
from cost_pipeline.ingest.lib.warehouse import IngestReport, quote

# (rule, condition that breaks it, message); evaluated in order, the first broken rule is recorded. The numeric
# columns' rules come from their domains (schemas.DEVICE_SAMPLE_DOMAINS), declared once for both ingest paths.
_RULES: list[Rule] = [
    ("timestamp.parseable", 'try_cast("timestamp" as timestamp) is null', "timestamp is missing or not a timestamp"),
    ("hostname.present", "nullif(trim(hostname), '') is null", "hostname is empty"),
    *domain_rules(DEVICE_SAMPLE_DOMAINS, DEVICE_SAMPLE_OPTIONAL),
]
_REQUIRED = [name for name, _ in DEVICE_SAMPLE_COLUMNS if name not in DEVICE_SAMPLE_OPTIONAL]


def _typed_select() -> str:
    casts = []
    for name, sql_type in DEVICE_SAMPLE_COLUMNS:
        expr = (
            f"nullif(trim(cast({quote(name)} as varchar)), '')"
            if sql_type == "VARCHAR"
            else (f"try_cast({quote(name)} as {sql_type})")
        )
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
    _require(h.strip().strip('"') for h in first_line(path).split(","))  # before DuckDB reads the file
    return stage_csv(con, path, _sample_columns, blank_lines, what="sample")


DEVICE_SAMPLES = Source(
    "device_samples",
    ("I2",),
    "telemetry",
    ("*.csv", "*.parquet"),
    "Per-GPU DCGM samples",
    InDatabaseSource(DEVICE_SAMPLE_COLUMNS, _typed_select(), _RULES, _stage, domains=DEVICE_SAMPLE_DOMAINS),
)
SOURCES = (DEVICE_SAMPLES,)


def load_device_samples(con: duckdb.DuckDBPyConnection, landing_dir: Path) -> IngestReport:
    """Replace ``raw.device_samples`` from every telemetry file, quarantining what breaks the contract."""
    return load_in_database(
        con, landing_dir, DEVICE_SAMPLES.files(landing_dir), DEVICE_SAMPLES.name, DEVICE_SAMPLES.loader
    )
