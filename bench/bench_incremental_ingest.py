"""Benchmark: nightly device-sample ingest as days accumulate, against the first night (issue 15: a night pays for
the new day's files, not for history).

Run on demand (not part of the test suite):

    .venv/bin/python bench/bench_incremental_ingest.py --days 5 --rows 1000000

Night 1 loads one day's file into a new warehouse; each later night adds the next day's file to the landing folder
and loads the folder again into the same warehouse. It prints each night's time and its ratio to night 1, and then,
as a baseline in the same run, a full load of the last night's folder into a new warehouse (what every night cost
before files already loaded were reused).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench_telemetry_ingest import write_samples

from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.telemetry import load_device_samples


def _night(warehouse: Path, landing: Path) -> tuple[float, int]:
    con = connect(warehouse, readable_dir=landing)
    try:
        started = time.perf_counter()
        report = load_device_samples(con, landing)
        return time.perf_counter() - started, report.rows_staged
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=5)
    parser.add_argument("--rows", type=int, default=1_000_000, help="samples per day")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        landing = Path(tmp) / "landing"
        (landing / "telemetry").mkdir(parents=True)
        warehouse = Path(tmp) / "nightly.duckdb"
        first = None
        print("| night | rows in raw | s | / night 1 |\n|---|---|---|---|")
        for day in range(1, args.days + 1):
            write_samples(landing / "telemetry", args.rows, day)
            seconds, rows = _night(warehouse, landing)
            first = first or seconds
            print(f"| {day} | {rows:,} | {seconds:.2f} | {seconds / first:.2f}x |")
        seconds, rows = _night(Path(tmp) / "full.duckdb", landing)
        print(f"| full load of night {args.days}'s folder | {rows:,} | {seconds:.2f} | {seconds / first:.2f}x |")


if __name__ == "__main__":
    main()
