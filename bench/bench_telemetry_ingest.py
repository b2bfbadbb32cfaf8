"""Benchmark: device-sample ingest with contract checks against a plain typed DuckDB load of the same file.

Run on demand (not part of the test suite):

    .venv/bin/python bench/bench_telemetry_ingest.py --rows 5000000

It reports both timings and their ratio, measured in the same run on the same machine, so the figure that
matters (what validation and line tracking cost over a bare load) does not depend on the machine.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import duckdb

from cost_pipeline.contract.schemas import DEVICE_SAMPLE_COLUMNS
from cost_pipeline.ingest.telemetry import load_device_samples
from cost_pipeline.ingest.warehouse import connect


def write_samples(path: Path, rows: int) -> None:
    """Generate samples inside DuckDB (8 GPUs per host, 1 Hz) and write them as CSV."""
    con = duckdb.connect()
    con.execute(f"""
        copy (
            select timestamp '2026-11-01' + to_seconds(i // 64) as "timestamp",
                   'host-' || ((i // 8) % 8) as hostname, i % 8 as gpu, cast(1000 + (i // 8) % 8 as varchar) as job_id,
                   (i % 97) / 100.0 as DCGM_FI_PROF_GR_ENGINE_ACTIVE, (i % 89) / 100.0 as DCGM_FI_PROF_SM_ACTIVE,
                   (i % 83) / 100.0 as DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, (i % 7) * 3e8 as DCGM_FI_PROF_NVLINK_TX_BYTES,
                   (i % 5) * 3e8 as DCGM_FI_PROF_NVLINK_RX_BYTES, 300.0 + i % 400 as DCGM_FI_DEV_POWER_USAGE
            from range({int(rows)}) as t(i)
        ) to '{path}' (header, delimiter ',')
    """)
    con.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        landing = Path(tmp) / "landing"
        (landing / "telemetry").mkdir(parents=True)
        sample_file = landing / "telemetry" / "samples.csv"
        write_samples(sample_file, args.rows)

        columns = "{" + ", ".join(f"'{n}': '{t}'" for n, t in DEVICE_SAMPLE_COLUMNS) + "}"
        baseline_con = duckdb.connect(str(Path(tmp) / "baseline.duckdb"))
        started = time.perf_counter()
        baseline_con.execute(f"create table s as select * from read_csv(?, header = true, columns = {columns})",
                             [str(sample_file)])
        baseline = time.perf_counter() - started
        baseline_con.close()

        con = connect(Path(tmp) / "checked.duckdb")
        started = time.perf_counter()
        report = load_device_samples(con, landing)
        checked = time.perf_counter() - started
        con.close()

    print(f"rows: {args.rows:,}  staged: {report.rows_staged:,}  quarantined: {report.rows_quarantined:,}")
    print(f"baseline typed load: {baseline:.2f} s   checked ingest: {checked:.2f} s   ratio: {checked / baseline:.2f}x")


if __name__ == "__main__":
    main()
