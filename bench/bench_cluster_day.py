"""Benchmark: the whole nightly job on a generated cluster (cluster.py), against bare DuckDB SQL and against pandas.

Run on demand (not part of the test suite), from ``bench/``:

    ../.venv/bin/python bench_cluster_day.py --gpus 5120 --interval 1s --days 1

(the design articles' cluster-day: 5,120 GPUs sampled every second, 442,368,000 device samples; ``--gpus 116``
gives about 10 M). It writes the cluster's landing folder (cluster.py, in a process of its own: Linux hands a
process's peak RSS on to the processes it starts), then times, each in a process of its own, back to back on the
same files:

- the night: ``cost-pipeline run``, the real nightly job, every source and every dbt model and test, start-up
  included, under the DuckDB memory limit (``--memory-limit``, default the product's own);
- the bare-SQL baseline: bench_memory.py's hand-written query over the same sample files, under the same limit
  (samples attributed by job label, windowed, capped, tiered and summed per job; only the jobs come from the
  warehouse);
- pandas: the same figures as a user would compute them with pandas (``read_parquet``, merges, a sort, a
  group-wise shift, a group-by), if the day has at most ``--pandas-max`` samples (pandas holds them all in memory).

The baseline's and pandas' per-job figures must equal ``int_job_utilization_tiered`` for every generated job, or
the benchmark fails. It prints wall time, CPU time, peak RSS and samples per second of each, the ratios, and how
much of dbt's work was data tests, and appends a line to ``results.csv`` beside it (kept in the repository;
``plot_scaling.py`` draws docs/scaling.svg from it).
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bench_memory import BIN, PARAMETERS, dbt_split, measured
from cluster import parse_interval

from cost_pipeline import duckdb_session
from cost_pipeline.duckdb_memory import DEFAULT_MEMORY_LIMIT, MEMORY_LIMIT_VARIABLE

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.csv"
FIGURES = "job_key, samples, effective_compute_gpu_seconds, comm_wait_gpu_seconds, idle_gpu_seconds"
RESULT_COLUMNS = [
    "measured_at",
    "commit",
    "gpus",
    "interval_s",
    "days",
    "samples",
    "jobs",
    "steps",
    "requests",
    "memory_limit",
    "night_wall_s",
    "night_cpu_s",
    "night_rss_mb",
    "bare_wall_s",
    "bare_cpu_s",
    "bare_rss_mb",
    "ratio",
    "pandas_wall_s",
    "pandas_cpu_s",
    "pandas_rss_mb",
    "dbt_test_share",
]


def pandas_figures(warehouse: Path, files: str, out: Path) -> None:
    """The per-job figures the way a pandas user computes them, into table ``tiered`` of ``out``."""
    import pandas as pd

    con = duckdb_session.connect(str(warehouse), read_only=True)
    values = dict(
        con.execute(
            "select parameter_name, parameter_value from staging.stg_contract__parameters where contract_version = 'v1'"
        ).fetchall()
    )
    p = {key: float(values[name]) for key, name in PARAMETERS.items()}
    aliases = con.execute(
        "select alias_job_id, job_key, held_from, held_until from intermediate.int_job_aliases_resolved"
    ).df()
    jobs = con.execute(
        "select job_key, start_at, end_at from intermediate.int_jobs_attributed "
        "where start_at is not null and end_at is not null"
    ).df()
    con.close()
    columns = ["timestamp", "hostname", "gpu", "job_id", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"]
    columns += ["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES"]
    samples = pd.concat([pd.read_parquet(f, columns=columns) for f in sorted(glob.glob(files))], ignore_index=True)
    s = samples.merge(aliases, left_on="job_id", right_on="alias_job_id").merge(jobs, on="job_key")
    s = s[
        (s.held_from.isna() | (s.timestamp >= s.held_from))
        & (s.held_until.isna() | (s.timestamp < s.held_until))
        & (s.timestamp >= s.start_at)
        & (s.timestamp < s.end_at)
    ]
    s = s.sort_values(["job_key", "hostname", "gpu", "timestamp"])
    s["next_at"] = s.groupby(["job_key", "hostname", "gpu"]).timestamp.shift(-1)
    s = s[s.next_at.isna() | (s.next_at > s.timestamp)]
    gap = ((s.next_at - s.timestamp).dt.total_seconds() // 1).fillna(p["interval"])
    to_end = (s.end_at - s.timestamp).dt.total_seconds() // 1
    s["seconds"] = pd.concat([gap, to_end], axis=1).min(axis=1).clip(upper=p["interval"] * p["gap"])
    nvlink = s.DCGM_FI_PROF_NVLINK_TX_BYTES + s.DCGM_FI_PROF_NVLINK_RX_BYTES
    comm = (nvlink >= p["comm_nvlink"]) & (s.DCGM_FI_PROF_PIPE_TENSOR_ACTIVE < p["comm_tensor"])
    effective = ~comm & (s.DCGM_FI_PROF_GR_ENGINE_ACTIVE >= p["effective_gr"])
    s["tier"] = "idle"
    s.loc[effective, "tier"] = "effective_compute"
    s.loc[comm, "tier"] = "comm_wait"
    by_tier = s.pivot_table(index="job_key", columns="tier", values="seconds", aggfunc="sum", fill_value=0)
    tiered = pd.DataFrame({"samples": s.groupby("job_key").size()})
    for tier in ("effective_compute", "comm_wait", "idle"):
        tiered[f"{tier}_gpu_seconds"] = by_tier[tier].astype("int64") if tier in by_tier else 0
    tiered = tiered.reset_index()
    result = duckdb_session.connect(str(out))
    result.register("frame", tiered)
    result.execute(f"create table tiered as select {FIGURES} from frame")
    result.close()


def check_equal(warehouse: Path, out: Path, generated_jobs: int, name: str) -> int:
    """The jobs of ``out``'s ``tiered`` (the generated jobs: their count must be ``generated_jobs``) have the same
    figures in int_job_utilization_tiered; raises otherwise. Returns the jobs compared."""
    con = duckdb_session.connect(str(out), read_only=True)
    con.execute(f"attach '{warehouse}' as wh (read_only)")
    mart = (
        f"select {FIGURES} from wh.intermediate.int_job_utilization_tiered "
        "where job_key in (select job_key from tiered)"
    )
    ours = f"select {FIGURES} from tiered"
    differ = con.execute(
        f"select count(*) from (({mart} except all {ours}) union all ({ours} except all {mart}))"
    ).fetchone()[0]
    jobs = con.execute("select count(*) from tiered").fetchone()[0]
    con.close()
    if differ or jobs < generated_jobs:
        raise SystemExit(
            f"{name}: {differ} per-job rows differ from int_job_utilization_tiered; {jobs} jobs of the "
            f"{generated_jobs} generated have samples"
        )
    return jobs


def append_result(row: dict[str, object]) -> None:
    new = not RESULTS.exists()
    with RESULTS.open("a", newline="", encoding="utf-8") as results:
        writer = csv.DictWriter(results, fieldnames=RESULT_COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow(row)


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpus", type=int, default=5120)
    parser.add_argument("--interval", type=parse_interval, default=1)
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--memory-limit", default=DEFAULT_MEMORY_LIMIT)
    parser.add_argument("--pandas-max", type=int, default=20_000_000, help="largest day pandas is run on (samples)")
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one, removed afterwards)")
    parser.add_argument("--no-record", action="store_true", help="do not append the figures to results.csv")
    parser.add_argument("--pandas", nargs=3, metavar=("WAREHOUSE", "FILES", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pandas:
        warehouse, files, out = args.pandas
        pandas_figures(Path(warehouse), files, Path(out))
        return
    measured_at = commit()  # the code the timed runs load, whatever is committed while they run
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-cluster-day-"))
    try:
        landing, warehouse = work / "landing", work / "warehouse.duckdb"
        files = str(landing / "telemetry" / "samples_*.parquet")
        generated = subprocess.run(
            [sys.executable, str(HERE / "cluster.py"), "--gpus", str(args.gpus), "--interval", f"{args.interval}s"]
            + ["--days", str(args.days), "--seed", str(args.seed), "--out", str(landing)],
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        )
        counts = json.loads(generated.stdout.strip().splitlines()[-1])
        print(f"generated: {counts}", flush=True)
        env = {**os.environ, MEMORY_LIMIT_VARIABLE: args.memory_limit, "DAGSTER_HOME": str(work / "dagster")}
        (work / "dagster").mkdir(exist_ok=True)
        night = measured(
            [str(BIN / "cost-pipeline"), "run", "--landing", str(landing), "--warehouse", str(warehouse)], env
        )
        print(f"night: {night}", flush=True)
        split = dbt_split(work / "dagster")
        bare_out = work / "baseline.duckdb"
        bare = measured(
            [sys.executable, str(HERE / "bench_memory.py"), "--memory-limit", args.memory_limit]
            + ["--baseline", str(warehouse), files, str(bare_out)],
            env,
        )
        jobs = check_equal(warehouse, bare_out, counts["jobs"], "the bare-SQL baseline")
        pandas = None
        if counts["samples"] <= args.pandas_max:
            pandas_out = work / "pandas.duckdb"
            pandas = measured([sys.executable, __file__, "--pandas", str(warehouse), files, str(pandas_out)], env)
            check_equal(warehouse, pandas_out, counts["jobs"], "pandas")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    test_share = split["test"] / (split["model"] + split["test"])
    print(
        f"{counts['gpus']:,} GPUs every {counts['interval_s']} s for {counts['days']} day(s): "
        f"{counts['samples']:,} device samples, {counts['jobs']:,} jobs, {counts['steps']:,} steps, "
        f"{counts['requests']:,} requests; memory_limit {args.memory_limit}; per-job figures of {jobs:,} jobs equal"
    )
    print("| | wall s | CPU s | peak RSS MB | samples/s | / bare SQL |")
    print("|---|---|---|---|---|---|")
    runs = [("the night (cost-pipeline run)", night), ("bare DuckDB SQL (telemetry only)", bare)]
    runs += [("pandas (telemetry only)", pandas)] if pandas else []
    for name, figures in runs:
        print(
            f"| {name} | {figures['wall']:.1f} | {figures['cpu']:.1f} | {figures['rss_mb']:.0f} "
            f"| {counts['samples'] / figures['wall']:,.0f} | {figures['wall'] / bare['wall']:.2f}x |"
        )
    if not pandas:
        print(f"pandas not run: {counts['samples']:,} samples > --pandas-max {args.pandas_max:,}")
    print(
        f"dbt build {split['elapsed']:.1f} s; of dbt's work (summed over its threads) data tests took "
        f"{test_share:.0%} (models {split['model']:.1f} s, tests {split['test']:.1f} s)"
    )
    if args.no_record:
        return
    runs_by_name = (("night", night), ("bare", bare), ("pandas", pandas))
    append_result(
        {
            "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": measured_at,
            **{key: counts[key] for key in ("gpus", "interval_s", "days", "samples", "jobs", "steps", "requests")},
            "memory_limit": args.memory_limit,
            **{
                f"{name}_{key}": round(figures[measure], 1) if figures else ""
                for name, figures in runs_by_name
                for key, measure in (("wall_s", "wall"), ("cpu_s", "cpu"), ("rss_mb", "rss_mb"))
            },
            "ratio": round(night["wall"] / bare["wall"], 2),
            "dbt_test_share": round(test_share, 3),
        }
    )
    print(f"appended to {RESULTS}")


if __name__ == "__main__":
    main()
