"""Benchmark: many small files. 10,000 one-record files of one source, checked ingest against a bare typed DuckDB
load of the same files.

Run on demand (not part of the test suite):

    .venv/bin/python bench/bench_many_files.py --rows 10000 --source training_steps
    .venv/bin/python bench/bench_many_files.py --rows 10000 --source device_samples
    .venv/bin/python bench/bench_many_files.py --rows 10000 --source device_samples_dcgm
    .venv/bin/python bench/bench_many_files.py --rows 10000 --source serving_requests
    .venv/bin/python bench/bench_many_files.py --rows 1000 --source billing_focus
    .venv/bin/python bench/bench_many_files.py --rows 365 --source storage_inventory --again
    .venv/bin/python bench/bench_many_files.py --rows 365 --source storage_inventory_parquet --again

(``--again``: the same folder loaded once more into the same warehouse and timed, a night with nothing new.)

Each file holds one record: a training step (JSON Lines, a trainer that writes a file per step), a device sample
(CSV with its header), a dcgm-exporter scrape of one GPU (the seven fields the contract reads), an inference request
(JSON Lines), or a FOCUS charge of one AWS Data Exports execution (its own folder under ``data/`` and its manifest
under ``metadata/``: an export refreshed several times a day), or one day of an S3 Inventory in AWS's layout (its
data file under ``data/``, its manifest in the day's dated folder), or one day of an inventory written as Parquet
without a StorageClass column (dated by its name, no manifest: flagged every night). The pipeline's ingest hashes,
opens, parses and checks every file, and records each in the file ledger; the baseline reads the same files with one
reader over their glob into a typed table (for the scrapes: their lines, the metric and value of each sample line).
Both are measured in the same run on the same machine (``against_baseline.py``); the ratio is the cost per file of
line tracking, the ledger and the checks.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from against_baseline import compare

from cost_pipeline.contract import load_contract
from cost_pipeline.contract.schemas import DEVICE_SAMPLE_BASE_COLUMNS
from cost_pipeline.ingest.lib.metric_series import METRICS
from cost_pipeline.ingest.registry import load_named

STEPS_SQL = """
create table steps as select * from read_json(?, format = 'newline_delimited', columns = {
    batch_id: 'VARCHAR', job_id: 'VARCHAR', step: 'BIGINT', started_at: 'TIMESTAMP', ended_at: 'TIMESTAMP',
    committed: 'BOOLEAN', discarded_reason: 'VARCHAR', samples: 'BIGINT', tokens: 'BIGINT',
    config_version: 'VARCHAR', data_version: 'VARCHAR'})
"""
SAMPLES_SQL = (
    "create table samples as select * from read_csv(?, header = true, columns = {"
    + ", ".join(f"'{n}': '{t}'" for n, t in DEVICE_SAMPLE_BASE_COLUMNS)
    + "})"
)
SCRAPES_SQL = r"""
create table scrapes as
select filename, regexp_extract(line, '^(\w+)\{', 1) as metric, cast(regexp_extract(line, ' (\S+)$', 1) as double)
    as value
from (select filename, unnest(string_split(content, chr(10))) as line from read_text(?))
where line <> '' and not starts_with(line, '#')
"""
REQUESTS_SQL = """
create table requests as select * from read_json(?, format = 'newline_delimited', columns = {
    request_id: 'VARCHAR', requested_at: 'TIMESTAMP', model: 'VARCHAR', tenant: 'VARCHAR', business_line: 'VARCHAR',
    input_tokens: 'BIGINT', output_tokens: 'BIGINT', cache_hit: 'BOOLEAN', latency_ms: 'BIGINT',
    latency_tier: 'VARCHAR', status: 'VARCHAR', task_id: 'VARCHAR', attempt: 'BIGINT', escalated_to: 'VARCHAR',
    human_handoff: 'BOOLEAN'})
"""


def _time(n: int) -> tuple[int, int, int]:
    return n // 3600 % 24, n // 60 % 60, n % 60


def write_step_files(folder: Path, files: int) -> Path:
    """One training step per file, ``step_000001.jsonl`` and on; returns the glob the baseline reads."""
    for step in range(1, files + 1):
        minute = step * 10
        record = {
            "batch_id": "B-7",
            "job_id": "1002",
            "step": step,
            "started_at": f"2026-11-03T{minute // 600 % 24:02d}:{minute // 10 % 60:02d}:00",
            "ended_at": f"2026-11-03T{minute // 600 % 24:02d}:{minute // 10 % 60:02d}:30",
            "committed": True,
            "discarded_reason": None,
            "samples": 512,
            "tokens": 1_000_000,
            "config_version": "rl-cfg-12",
            "data_version": "prefs-2026-10",
        }
        (folder / f"step_{step:06d}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    return folder / "*.jsonl"


def write_sample_files(folder: Path, files: int) -> Path:
    """One device sample per CSV file, with its header."""
    header = ",".join(name for name, _ in DEVICE_SAMPLE_BASE_COLUMNS)
    for n in range(files):
        hour, minute, second = _time(n)
        row = f"2026-11-03 {hour:02d}:{minute:02d}:{second:02d},node-{n % 16:02d},{n % 8},1001,0.9,0.8,0.4,1e8,2e8,300"
        (folder / f"sample_{n:06d}.csv").write_text(f"{header}\n{row}\n", encoding="utf-8")
    return folder / "*.csv"


def write_scrape_files(folder: Path, files: int) -> Path:
    """One dcgm-exporter scrape of one GPU per file, its time in the file's name."""
    for n in range(files):
        hour, minute, second = _time(n)
        lines = [
            f'{metric}{{gpu="0",UUID="GPU-0",Hostname="node-{n % 16:02d}",hpc_job="1001"}} {value}'
            for metric, value in zip(METRICS, (0.93, 0.81, 0.42, 1.5e9, 0.5e9, 650.5, 1e9), strict=False)
        ]
        name = f"node-{n % 16:02d}_2026-11-03T{hour:02d}-{minute:02d}-{second:02d}Z_{n:06d}.prom"
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / "*.prom"


def write_request_files(folder: Path, files: int) -> Path:
    """One inference request per JSON Lines file."""
    for n in range(files):
        hour, minute, second = _time(n)
        record = {
            "request_id": f"r-{n}",
            "requested_at": f"2026-11-03T{hour:02d}:{minute:02d}:{second:02d}",
            "model": "llama-3-70b",
            "tenant": "support",
            "business_line": "support",
            "input_tokens": 1200,
            "output_tokens": 130,
            "cache_hit": False,
            "latency_ms": 920,
            "latency_tier": "standard",
            "status": "completed",
            "task_id": f"ticket-{n}",
            "attempt": 1,
            "escalated_to": None,
            "human_handoff": False,
        }
        (folder / f"requests_{n:06d}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    return folder / "*.jsonl"


FOCUS_SQL = "create table charges as select * from read_csv(?, header = true, all_varchar = true)"
_FOCUS_HEADER = (
    "BillingAccountId,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,"
    "BilledCost,EffectiveCost,BillingCurrency,ResourceId,ServiceName,Tags"
)


def write_focus_runs(folder: Path, files: int) -> Path:
    """One AWS Data Exports execution per data file: the file in the execution's folder, its manifest under
    ``metadata/``, each a day's charge of its own resource."""
    export = folder / "focus-export"
    for n in range(files):
        execution = f"exec-{n:06d}"
        data = export / "data" / "BILLING_PERIOD=2026-11" / execution
        data.mkdir(parents=True)
        day = n % 30 + 1
        line = (
            f"123456789012,2026-11-01T00:00:00Z,2026-12-01T00:00:00Z,2026-11-{day:02d}T00:00:00Z,"
            f"2026-11-{day:02d}T01:00:00Z,Usage,1.25,1.25,USD,i-{n:06d},Amazon EC2,"
        )
        (data / "focus-export-00001.csv").write_text(f"{_FOCUS_HEADER}\n{line}\n", encoding="utf-8")
        metadata = export / "metadata" / "BILLING_PERIOD=2026-11" / execution
        metadata.mkdir(parents=True)
        manifest = {
            "executionId": execution,
            "dataFiles": [f"s3://bucket/focus-export/data/BILLING_PERIOD=2026-11/{execution}/focus-export-00001.csv"],
        }
        (metadata / "focus-export-Manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return export / "data" / "*" / "*" / "*.csv"


INVENTORY_SQL = "create table objects as select * from read_csv(?, header = false, all_varchar = true)"
_INVENTORY_SCHEMA = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass"


def write_inventory_days(folder: Path, files: int) -> Path:
    """One daily S3 Inventory delivery per data file, as ``aws s3 sync`` copies AWS's layout: the data file under
    ``<config-id>/data/``, its manifest in the day's folder ``<config-id>/<YYYY-MM-DDTHH-MMZ>/``."""
    config = folder / "inventory" / "ml-prod" / "daily"
    (config / "data").mkdir(parents=True)
    first = datetime(2025, 1, 1, 1, tzinfo=UTC)
    for n in range(files):
        day = first + timedelta(days=n)
        name = f"{n:08d}-inventory.csv.gz"
        line = f'"ml-prod","raw/object-{n}","1024","2024-12-01T00:00:00.000Z","e{n}","STANDARD"'
        (config / "data" / name).write_bytes(gzip.compress(f"{line}\n".encode(), mtime=0))
        dated = config / day.strftime("%Y-%m-%dT%H-%MZ")
        dated.mkdir()
        manifest = {
            "sourceBucket": "ml-prod",
            "destinationBucket": "arn:aws:s3:::ml-inventory",
            "version": "2016-11-30",
            "creationTimestamp": str(int(day.timestamp() * 1000)),
            "fileFormat": "CSV",
            "fileSchema": _INVENTORY_SCHEMA,
            "files": [{"key": f"inventory/ml-prod/daily/data/{name}", "size": 1, "MD5checksum": "0" * 32}],
        }
        (dated / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return config / "data" / "*.csv.gz"


INVENTORY_PARQUET_SQL = "create table objects as select * from read_parquet(?)"


def write_inventory_parquet_days(folder: Path, files: int) -> Path:
    """One day's inventory a Parquet file, dated by its name, without StorageClass (priced at the default class and
    flagged: its schema is read every night, the file reused or not)."""
    import duckdb

    inventories = folder / "inventory"
    inventories.mkdir(parents=True)
    con = duckdb.connect()
    first = datetime(2025, 1, 1, tzinfo=UTC)
    for n in range(files):
        path = inventories / f"ml-prod_{(first + timedelta(days=n)).date().isoformat()}.parquet"
        con.execute(
            "copy (select 'ml-prod' as bucket, 'raw/object-' || ? as key, 1024 as size, "
            "timestamp '2024-12-01' as last_modified_date) to ? (format parquet)",
            [n, str(path)],
        )
    con.close()
    return inventories / "*.parquet"


# source -> (its landing folder, the writer, the baseline)
BENCHES: dict[str, tuple[str, Callable[[Path, int], Path], str]] = {
    "training_steps": ("steps", write_step_files, STEPS_SQL),
    "device_samples": ("telemetry", write_sample_files, SAMPLES_SQL),
    "device_samples_dcgm": ("telemetry", write_scrape_files, SCRAPES_SQL),
    "serving_requests": ("requests", write_request_files, REQUESTS_SQL),
    "billing_focus": ("billing", write_focus_runs, FOCUS_SQL),
    "storage_inventory": ("storage", write_inventory_days, INVENTORY_SQL),
    "storage_inventory_parquet": ("storage", write_inventory_parquet_days, INVENTORY_PARQUET_SQL),
}
SOURCE_OF = {"storage_inventory_parquet": "storage_inventory"}  # a bench of another layout -> the source it loads


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", choices=sorted(BENCHES), default="training_steps")
    source = parser.parse_known_args()[0].source
    folder, write, baseline = BENCHES[source]
    loaded = SOURCE_OF.get(source, source)
    compare(folder, write, baseline, lambda con, landing: load_named(con, landing, loaded, load_contract()))
