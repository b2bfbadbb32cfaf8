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

from cost_pipeline.contract.schemas import DEVICE_SAMPLE_ACTIVITY_COLUMNS, DEVICE_SAMPLE_COLUMNS
from cost_pipeline.ingest.lib.in_database import (
    InDatabaseSource,
    Rule,
    first_line,
    load_in_database,
    stage_csv,
    stage_parquet,
)
from cost_pipeline.ingest.lib.records import FileRejected, Rejection
from cost_pipeline.ingest.lib.source import Source
from cost_pipeline.ingest.lib.warehouse import IngestReport, quote

# (rule, condition that breaks it, message); evaluated in order, the first broken rule is recorded.
_RULES: list[Rule] = [
    ("timestamp.parseable", 'try_cast("timestamp" as timestamp) is null', "timestamp is missing or not a timestamp"),
    ("hostname.present", "nullif(trim(hostname), '') is null", "hostname is empty"),
    ("gpu.index", "coalesce(try_cast(gpu as integer) < 0, true)", "gpu is not a non-negative integer"),
    *[
        (
            f"{c}.unit_range",
            f"coalesce(not (try_cast({quote(c)} as double) between 0 and 1), true)",
            f"{c} is not an activity between 0 and 1",
        )
        for c in DEVICE_SAMPLE_ACTIVITY_COLUMNS
    ],
    *[
        (
            f"{c}.non_negative",
            f"coalesce(try_cast({quote(c)} as double) < 0, true)",
            f"{c} is not a non-negative number",
        )
        for c in ("DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES")
    ],
    (
        "DCGM_FI_DEV_POWER_USAGE.non_negative",
        "DCGM_FI_DEV_POWER_USAGE is not null and coalesce(try_cast(DCGM_FI_DEV_POWER_USAGE as double) < 0, true)",
        "DCGM_FI_DEV_POWER_USAGE is not a non-negative number",
    ),
]
_REQUIRED = [name for name, _ in DEVICE_SAMPLE_COLUMNS if name not in ("job_id", "DCGM_FI_DEV_POWER_USAGE")]


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


def _sample_columns(present: dict[str, str]) -> str:
    """The sample columns, by the names DuckDB gave them; an absent optional column is null."""
    _require(present)
    return ", ".join(
        quote(name) if name in present else f"cast(null as varchar) as {quote(name)}"
        for name, _ in DEVICE_SAMPLE_COLUMNS
    )


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
    InDatabaseSource(DEVICE_SAMPLE_COLUMNS, _typed_select(), _RULES, _stage),
)
SOURCES = (DEVICE_SAMPLES,)


def load_device_samples(con: duckdb.DuckDBPyConnection, landing_dir: Path) -> IngestReport:
    """Replace ``raw.device_samples`` from every telemetry file, quarantining what breaks the contract."""
    return load_in_database(
        con, landing_dir, DEVICE_SAMPLES.files(landing_dir), DEVICE_SAMPLES.name, DEVICE_SAMPLES.loader
    )
