"""Benchmark: nights that each bring one more day of device samples, built incrementally against a full build.

Run on demand (not part of the test suite):

    cd bench && ../.venv/bin/python bench_incremental_night.py --samples 2000000

It writes the demo's landing folder with its device samples replaced by ``--samples`` generated ones
(``bench_memory.write_samples``: the demo's jobs and tier pattern, more GPUs per host), split into one Parquet file per
day, and runs the whole night once with no telemetry file (setup, not timed). Then each night adds the next day's file
and times, back to back on the same files, each in a process of its own:

- the incremental night: ``dagster asset materialize`` of the telemetry path (``bench_memory.TELEMETRY_ASSETS``:
  ingest, attribution, ``int_device_samples_inputs``, ``int_device_samples_tiered``, per-job sums), which builds again
  only the jobs the new file spans;
- the full build: the same, on a copy of the warehouse taken before the night, with the tiered table's kept inputs
  dropped, so that every job is built again (what every night cost before).

After each night the two warehouses' ``int_device_samples_tiered`` must be equal row for row, or the benchmark fails.
It prints, per night, the samples in the tier table, both wall times and their ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from bench_memory import BIN, TELEMETRY_ASSETS, forget_built, measured, write_samples

from cost_pipeline import duckdb_session
from cost_pipeline.demo import write_demo_landing
from cost_pipeline.duckdb_memory import MEMORY_LIMIT_VARIABLE

TIERED = "intermediate.int_device_samples_tiered"


def split_by_day(telemetry: Path, held: Path) -> list[Path]:
    """Move the generated samples into one Parquet file per day under ``held``; returns them in day order."""
    held.mkdir()
    generated = telemetry / "generated.parquet"
    con = duckdb_session.connect()
    days = [
        day
        for (day,) in con.execute(f"select distinct cast(timestamp as date) from '{generated}' order by 1").fetchall()
    ]
    for day in days:
        con.execute(
            f"copy (select * from '{generated}' where cast(timestamp as date) = '{day}' order by all)"
            f" to '{held / f'samples-{day}.parquet'}' (format parquet)"
        )
    con.close()
    generated.unlink()
    return sorted(held.iterdir())


def night(warehouse: Path, env: dict[str, str]) -> dict[str, float]:
    command = [str(BIN / "dagster"), "asset", "materialize", "-m", "cost_pipeline.definitions"]
    return measured(command + ["--select", TELEMETRY_ASSETS], {**env, "COST_WAREHOUSE": str(warehouse)})


def equal_tiers(incremental: Path, full: Path, tables: tuple[str, ...] = (TIERED,)) -> int:
    """Rows of the tier table; raises unless both warehouses hold the same rows in each of ``tables``."""
    con = duckdb_session.connect(str(incremental), read_only=True)
    con.execute(f"attach '{full}' as full_build (read_only)")
    for table in tables:
        differ = con.execute(
            f"select count(*) from ((select * from {table} except all select * from full_build.{table})"
            f" union all (select * from full_build.{table} except all select * from {table}))"
        ).fetchone()[0]
        if differ:
            con.close()
            raise SystemExit(f"the incremental {table} differs from the full build's in {differ} rows")
    rows = con.execute(f"select count(*) from {TIERED}").fetchone()[0]
    con.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=2_000_000)
    parser.add_argument("--memory-limit", default="3GiB")
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one, removed afterwards)")
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-incremental-night-"))
    rows = []
    try:
        landing = write_demo_landing(work / "landing")
        write_samples(landing / "telemetry", args.samples)
        days = split_by_day(landing / "telemetry", work / "held")
        warehouse, full = work / "warehouse.duckdb", work / "full.duckdb"
        env = {**os.environ, MEMORY_LIMIT_VARIABLE: args.memory_limit}
        env |= {"COST_LANDING_DIR": str(landing), "DAGSTER_HOME": str(work)}
        subprocess.run(
            [str(BIN / "cost-pipeline"), "run", "--landing", str(landing), "--warehouse", str(warehouse)],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        for number, day in enumerate(days, start=1):
            shutil.copy(day, landing / "telemetry" / day.name)
            shutil.copy(warehouse, full)
            forget_built(full)
            incremental = night(warehouse, env)
            whole = night(full, env)
            rows.append((number, day.stem, equal_tiers(warehouse, full), incremental["wall"], whole["wall"]))
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{args.samples:,} device samples over {len(rows)} days; each night's tier table equal to a full build's")
    print("| night | new file | samples in the tier table | incremental s | full build s | ratio |")
    print("|---|---|---|---|---|---|")
    for number, name, count, incremental_s, full_s in rows:
        print(f"| {number} | {name} | {count:,} | {incremental_s:.1f} | {full_s:.1f} | {incremental_s / full_s:.2f}x |")


if __name__ == "__main__":
    main()
