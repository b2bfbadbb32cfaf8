"""Benchmark-style report (not a timed test): the cost-to-complete back-test on a generated history of batches.

Run on demand (not part of the test suite; one whole nightly run, a few minutes on 2 cores):

    .venv/bin/python bench/bench_forecast_backtest.py --batches 60 --seed 7

It writes the demo's landing folder, then registers --batches more batches and appends their jobs to the scheduler
export: each batch plans P GPU-hours (budget_gpu_hours) and really needs r x P useful GPU-hours, r drawn around 1;
its jobs (8 or 16 GPUs, 1-12 h) fail now and then (NODE_FAIL, then a failure_retry restart) or are redone
(eval_rework). Batches start one after another across October and November 2026, so later batches have finished
batches to learn from. It runs the whole nightly job and prints fct_forecast_backtest_summary: the median absolute
percentage error and how often the range held the actual final compute cost, per runtime point and over all.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from cost_pipeline import duckdb_session
from cost_pipeline.cli import run_pipeline
from cost_pipeline.demo import BATCHES, DemoJob, _sacct_rows, write_demo_landing

REGISTRY_COLUMNS = list(BATCHES[0])


def generated_history(batches: int, seed: int) -> tuple[list[dict[str, str]], tuple[DemoJob, ...]]:
    """The registry rows and jobs of ``batches`` sequential batches."""
    rng = random.Random(seed)
    registry: list[dict[str, str]] = []
    jobs: list[DemoJob] = []
    start = datetime(2026, 10, 1)
    span = timedelta(days=55) / batches
    job_number = 50000
    for index in range(batches):
        batch = f"G-{index + 1:03d}"
        plan = rng.choice([48, 64, 96, 128, 160])
        need = plan * min(max(rng.lognormvariate(0, 0.3), 0.4), 2.5)
        registry.append(
            dict(
                BATCHES[0],
                batch_id=batch,
                goal=f"generated batch {index + 1}",
                budget_cost=f"{plan * 30:.2f}",
                budget_gpu_hours=f"{plan:.2f}",
                max_trial_rounds="3",
                variance_boundary_pct="10.00",
            )
        )
        at = start + span * index
        done = 0.0
        while done < need:
            gpus = rng.choice([8, 16])
            hours = min(rng.randint(1, 12), max(1, round((need - done) / gpus)))
            job_number += 1
            labels = f"batch={batch};phase=training;reason=planned_experiment"
            end = at + timedelta(hours=hours)
            if rng.random() < 0.12:  # a node failure part-way, then a retry of the whole job
                lost = at + timedelta(hours=max(1, hours // 2))
                jobs.append(DemoJob(str(job_number), "gen", labels, gpus, at, lost, "1-00:00:00", state="NODE_FAIL"))
                retry = job_number
                job_number += 1
                labels = f"batch={batch};phase=training;reason=failure_retry;restart_of={retry}"
                at = lost + timedelta(minutes=30)
                end = at + timedelta(hours=hours)
            jobs.append(DemoJob(str(job_number), "gen", labels, gpus, at, end, "1-00:00:00"))
            if rng.random() < 0.08:  # the evaluation had to be redone
                job_number += 1
                redo = f"batch={batch};phase=validation;reason=eval_rework;continues={job_number - 1}"
                jobs.append(DemoJob(str(job_number), "gen", redo, 8, end, end + timedelta(hours=1), "02:00:00"))
                end += timedelta(hours=1)
            done += gpus * hours
            at = end + timedelta(minutes=rng.randint(10, 180))
    return registry, tuple(jobs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    registry, jobs = generated_history(args.batches, args.seed)
    with tempfile.TemporaryDirectory() as folder:
        landing = write_demo_landing(Path(folder) / "landing")
        with (landing / "registry" / "batches.csv").open("a", encoding="utf-8") as out:
            out.writelines(",".join(row[c] for c in REGISTRY_COLUMNS) + "\n" for row in registry)
        sacct = landing / "scheduler" / "sacct_2026-11.txt"
        with sacct.open("a", encoding="utf-8") as out:
            out.writelines("|".join(row) + "\n" for row in _sacct_rows(jobs))
        warehouse = Path(folder) / "warehouse.duckdb"
        if not run_pipeline(landing, warehouse):
            raise SystemExit("the nightly run failed")
        con = duckdb_session.connect(str(warehouse), read_only=True)
        finished = con.execute("select count(distinct batch_id) from marts.fct_forecast_backtest").fetchone()[0]
        rows = con.execute(
            "select forecast_point, forecasts, median_absolute_pct_error, actual_in_range, actual_in_range_pct"
            " from marts.fct_forecast_backtest_summary order by runtime_pct nulls last"
        ).fetchall()
        con.close()
    print(f"generated batches: {args.batches} (seed {args.seed}); finished batches back-tested: {finished}")
    print(f"{'point':>6} {'forecasts':>10} {'MdAPE %':>9} {'in range':>9} {'in range %':>11}")
    for point, forecasts, mdape, held, held_pct in rows:
        print(f"{point:>6} {forecasts:>10} {mdape!s:>9} {held:>9} {held_pct!s:>11}")


if __name__ == "__main__":
    main()
