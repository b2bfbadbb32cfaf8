"""Benchmark: how long a run launched as the UI and the schedule launch it waits before its first step starts.

Run on demand (not part of the test suite):

    .venv/bin/python bench/bench_launch.py [--runs 3]

The UI, a schedule tick and ``dagster job launch`` hand a run to the instance's run launcher, which starts a process
that loads the code location and executes the run. This launches ``nightly_cost_refresh_job`` that way on the demo
landing folder (``dagster job launch -w workspace.yaml``) into a temporary warehouse and Dagster home, and reads
from the run's event log the time from the launch (``RUN_STARTING``) to the first ``STEP_START``: code location
load, manifest read, resource set-up. No ``dbt parse`` happens there: the manifest is prepared beforehand, as
``dagster dev`` and ``cost-pipeline prepare`` do.

The baseline, in the same way and the same session: a one-asset Dagster project launched the same way, which
pays only Dagster's own start-up. It prints each run's figure, the medians as a Markdown table and their ratio.
The goal (issue 15) is a first step within 5 s of the launch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg

from cost_pipeline.dbt_setup import prepare_manifest
from cost_pipeline.demo import write_demo_landing

ROOT = Path(__file__).resolve().parents[1]
DAGSTER = str(Path(sys.executable).parent / "dagster")
BASELINE = """
import dagster as dg


@dg.asset
def one() -> int:
    return 1


defs = dg.Definitions(assets=[one], jobs=[dg.define_asset_job("one_job")])
"""


def launch_to_first_step(target: list[str], job: str, env: dict[str, str], home: Path) -> float:
    """Launch ``job`` of ``target`` through the run launcher; seconds from RUN_STARTING to the first STEP_START."""
    home.mkdir(parents=True, exist_ok=True)
    # launched at once, as the UI's launch with the daemon's queue empty: no queue to wait in here
    (home / "dagster.yaml").write_text(
        "telemetry:\n  enabled: false\nrun_coordinator:\n  module: dagster._core.run_coordinator\n"
        "  class: DefaultRunCoordinator\n",
        encoding="utf-8",
    )
    env = {**os.environ, **env, "DAGSTER_HOME": str(home)}
    subprocess.run([DAGSTER, "job", "launch", *target, "-j", job], cwd=ROOT, env=env, check=True, capture_output=True)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs(limit=1)
        while not instance.get_run_by_id(run.run_id).is_finished:
            time.sleep(0.5)
        events = [e for e in instance.all_logs(run.run_id) if e.dagster_event is not None]
    started = min(e.timestamp for e in events if e.dagster_event_type == dg.DagsterEventType.RUN_STARTING)
    first = min(e.timestamp for e in events if e.dagster_event_type == dg.DagsterEventType.STEP_START)
    return first - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="launches of each (the median is reported)")
    args = parser.parse_args()
    prepare_manifest()
    ours, baseline = [], []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "baseline.py").write_text(BASELINE, encoding="utf-8")
        landing = write_demo_landing(root / "landing")
        for number in range(args.runs):
            env = {"COST_LANDING_DIR": str(landing), "COST_WAREHOUSE": str(root / f"warehouse{number}.duckdb")}
            ours.append(
                launch_to_first_step(["-w", "workspace.yaml"], "nightly_cost_refresh_job", env, root / f"home{number}")
            )
            baseline.append(launch_to_first_step(["-f", str(root / "baseline.py")], "one_job", {}, root / f"b{number}"))
            print(f"launch {number + 1}: pipeline {ours[-1]:.1f} s, one-asset baseline {baseline[-1]:.1f} s")
    mine, bare = statistics.median(ours), statistics.median(baseline)
    print("| launch to first step | median s |")
    print("|---|---|")
    print(f"| nightly_cost_refresh_job | {mine:.1f} |")
    print(f"| one-asset baseline | {bare:.1f} |")
    print(f"| ratio | {mine / bare:.1f}x |")


if __name__ == "__main__":
    main()
