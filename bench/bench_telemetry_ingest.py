"""Benchmark: device-sample ingest with contract checks against a plain typed DuckDB load of the same file.

Run on demand (not part of the test suite):

    .venv/bin/python bench/bench_telemetry_ingest.py --rows 5000000

It reports both timings and their ratio, measured in the same run on the same machine (``against_baseline.py``).
"""

from __future__ import annotations

from pathlib import Path

from against_baseline import compare

from cost_pipeline import duckdb_session
from cost_pipeline.contract.schemas import DEVICE_SAMPLE_BASE_COLUMNS
from cost_pipeline.ingest.telemetry import load_device_samples


def write_samples(folder: Path, rows: int, day: int = 1) -> Path:
    """Generate samples of November ``day`` inside DuckDB (8 GPUs per host, 1 Hz) and write them as CSV."""
    path = folder / ("samples.csv" if day == 1 else f"samples_2026-11-{day:02d}.csv")
    con = duckdb_session.connect()
    con.execute(f"""
        copy (
            select timestamp '2026-11-{day:02d}' + to_seconds(i // 64) as "timestamp",
                   'host-' || ((i // 8) % 8) as hostname, i % 8 as gpu, cast(1000 + (i // 8) % 8 as varchar) as job_id,
                   (i % 97) / 100.0 as DCGM_FI_PROF_GR_ENGINE_ACTIVE, (i % 89) / 100.0 as DCGM_FI_PROF_SM_ACTIVE,
                   (i % 83) / 100.0 as DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, (i % 7) * 3e8 as DCGM_FI_PROF_NVLINK_TX_BYTES,
                   (i % 5) * 3e8 as DCGM_FI_PROF_NVLINK_RX_BYTES, 300.0 + i % 400 as DCGM_FI_DEV_POWER_USAGE
            from range({int(rows)}) as t(i)
        ) to '{path}' (header, delimiter ',')
    """)
    con.close()
    return path


def main() -> None:
    columns = "{" + ", ".join(f"'{n}': '{t}'" for n, t in DEVICE_SAMPLE_BASE_COLUMNS) + "}"
    compare(
        "telemetry",
        write_samples,
        f"create table s as select * from read_csv(?, header = true, columns = {columns})",
        load_device_samples,
    )


if __name__ == "__main__":
    main()
