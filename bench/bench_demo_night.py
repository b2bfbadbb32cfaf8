"""Benchmark: the demo night end to end, start-up included, warm; against a bare ``dbt build`` of the same project.

Run on demand (not part of the test suite):

    .venv/bin/python bench/bench_demo_night.py [--runs 5]

``cost-pipeline demo`` runs once in a temporary folder to warm it (the first night writes the warehouse and the
Dagster home and loads every landing file), then ``--runs`` times more in the same folder, each timed as a whole
process: wall time and CPU (user + system of the process and its children: dbt runs in a child). The baseline, in
the same run and interleaved with the nights: ``dbt build --exclude-resource-type unit_test`` of the same project on
a copy of the demo's warehouse, alone (its own process, partial parse warm, no Dagster, no ingest, no publishing):
what the night's models and tests cost by themselves. It prints each run, then the medians and their ratio as a
Markdown table. The goal of issue 15 is a demo night of 20 s or less, warm.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from descendants import adopt_orphans, reap_orphans

from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, dbt_executable

CLI = str(Path(sys.executable).parent / "cost-pipeline")


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, its whole process tree: the fork server's dbt builds too,
    ``descendants``) of ``command``, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    adopt_orphans()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        timed([CLI, "demo"], root)  # warm-up: a new warehouse, every landing file loaded
        bare = root / "bare"
        bare.mkdir()
        shutil.copyfile(root / "demo" / "warehouse.duckdb", bare / "warehouse.duckdb")
        env = {**os.environ, "COST_WAREHOUSE": str(bare / "warehouse.duckdb")}
        dbt = [dbt_executable(), "--log-level-file", "warn", "build", "--exclude-resource-type", "unit_test"]
        dbt += ["--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR)]
        dbt += ["--target-path", str(bare / "target"), "--log-path", str(bare / "logs")]
        timed(dbt, DBT_PROJECT_DIR, env)  # warm-up: its own target folder, parsed once
        nights, builds = [], []
        for run in range(1, args.runs + 1):
            nights.append(timed([CLI, "demo"], root))
            builds.append(timed(dbt, DBT_PROJECT_DIR, env))
            print(
                f"run {run}: demo night {nights[-1][0]:.2f} s wall ({nights[-1][1]:.2f} s CPU), "
                f"bare dbt build {builds[-1][0]:.2f} s wall ({builds[-1][1]:.2f} s CPU)",
                flush=True,
            )
    night_wall, night_cpu = (statistics.median(x) for x in zip(*nights, strict=True))
    bare_wall, bare_cpu = (statistics.median(x) for x in zip(*builds, strict=True))
    print(f"\n| median of {args.runs} | wall s | CPU s |\n|---|---|---|")
    print(f"| demo night, warm (`cost-pipeline demo`) | {night_wall:.1f} | {night_cpu:.1f} |")
    print(f"| bare `dbt build` of the same project | {bare_wall:.1f} | {bare_cpu:.1f} |")
    print(f"| ratio | {night_wall / bare_wall:.2f}x | {night_cpu / bare_cpu:.2f}x |")


if __name__ == "__main__":
    main()
