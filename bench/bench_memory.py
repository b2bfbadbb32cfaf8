"""Benchmark: the telemetry part of a night (ingest + dbt) under the DuckDB memory limit, against bare DuckDB SQL.

Run on demand (not part of the test suite); it needs a few GB of disk per 10 M samples:

    .venv/bin/python bench/bench_memory.py --samples 2000000 --memory-limit 3GiB

It writes the demo's landing folder with its device samples replaced by ``--samples`` generated ones (the demo's
jobs, hosts and tier pattern at the contract's 60 s interval, more GPUs per host), as Parquet; runs one whole night
on it (setup, not timed); then times, each in a process of its own, measured back to back on the same files:

- the pipeline: the Dagster assets of the telemetry path, ``raw/device_samples`` and the dbt models from
  ``stg_telemetry__device_samples`` to ``int_job_utilization_tiered`` with their tests, as ``dagster asset
  materialize`` runs them (start-up included), under ``COST_DUCKDB_MEMORY_LIMIT``, every sample file read again
  and every job's tiers built again (the ledger of loaded files and the tier table's kept inputs are dropped first:
  a night reads only new files, and the tier table is incremental by job);
- the baseline: one hand-written DuckDB query over the same Parquet files, under the same limit, that attributes
  each sample by its job label, windows, caps and tiers it, and sums per job. Its per-job figures are checked
  against ``int_job_utilization_tiered`` (equal, or the benchmark fails).

``--dir`` keeps the work folder; ``--reuse`` then times again on the files and warehouse an earlier run of the same
``--samples`` left there, without writing them or running the setup night again.

It prints wall time, CPU time and peak RSS (the largest process: ``getrusage`` of self and children) of each and
the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import dagster as dg

from cost_pipeline import duckdb_session
from cost_pipeline.demo import JOBS, write_demo_landing
from cost_pipeline.duckdb_memory import MEMORY_LIMIT_VARIABLE

TELEMETRY_ASSETS = ",".join(
    [
        "raw/device_samples",
        "staging/stg_telemetry__device_samples",
        "intermediate/int_device_samples_attributed",
        "intermediate/int_device_samples_inputs",
        "intermediate/int_device_samples_tiered",
        "intermediate/int_job_utilization_tiered",
    ]
)
SAMPLE_SECONDS = 60  # the contract's sample_interval_seconds
BIN = Path(sys.executable).parent
DBT_TARGET = Path(__file__).resolve().parents[1] / "dbt_project" / "target"
# The demo's pattern by minute ``m`` of the job: idle while setting up, every 10th minute waiting on NVLink. The
# metric columns of a generated device sample, shared by the generators of bench/.
DEMO_PATTERN = """
    case when m < 10 then 0.02 when m % 10 = 9 then 0.30 else 0.85 end as DCGM_FI_PROF_GR_ENGINE_ACTIVE,
    case when m < 10 then 0.01 when m % 10 = 9 then 0.20 else 0.80 end as DCGM_FI_PROF_SM_ACTIVE,
    case when m < 10 then 0.0 when m % 10 = 9 then 0.01 else 0.60 end as DCGM_FI_PROF_PIPE_TENSOR_ACTIVE,
    case when m < 10 then 1.0e6 when m % 10 = 9 then 1.0e9 else 1.5e8 end as DCGM_FI_PROF_NVLINK_TX_BYTES,
    case when m < 10 then 1.0e6 when m % 10 = 9 then 1.0e9 else 1.5e8 end as DCGM_FI_PROF_NVLINK_RX_BYTES,
    case when m < 10 then 120.0 else 650.0 end as DCGM_FI_DEV_POWER_USAGE
"""


def write_samples(telemetry: Path, samples: int) -> int:
    """Replace the demo's telemetry files with about ``samples`` device samples as Parquet; returns how many."""
    for old in telemetry.iterdir():
        old.unlink()
    jobs = [
        (job.job_id_raw or job.job_id, job.start, job.end, host, job.gpus // len(job.hosts))
        for job in JOBS
        if job.start is not None and job.end is not None and job.gpus
        for host in job.hosts
    ]
    gpu_minutes = sum(int((end - start) / timedelta(minutes=1)) * gpus for _, start, end, _, gpus in jobs)
    replicas = max(1, -(-samples // gpu_minutes))  # each GPU of the demo becomes this many
    con = duckdb_session.connect()
    con.execute("create table jobs (label varchar, start_at timestamp, end_at timestamp, host varchar, gpus int)")
    con.executemany("insert into jobs values (?, ?, ?, ?, ?)", jobs)
    con.execute(
        f"""
        copy (
            select start_at + to_seconds({SAMPLE_SECONDS} * m) as "timestamp", host as hostname,
                   cast(g as integer) as gpu, label as job_id,
                   {DEMO_PATTERN}
            from jobs,
                 range(cast(date_diff('minute', start_at, end_at) as bigint)) as minutes(m),
                 range(cast(gpus * {replicas} as bigint)) as gpus(g)
            order by "timestamp", hostname, gpu
            limit {int(samples)}
        ) to '{telemetry / "generated.parquet"}' (format parquet)
        """
    )
    written = con.execute(f"select count(*) from '{telemetry / 'generated.parquet'}'").fetchone()[0]
    con.close()
    return written


BASELINE_SQL = """
create table tiered as
with samples as (
    select * from read_parquet($files)
),
aliases as (
    select alias_job_id, job_key, held_from, held_until from wh.intermediate.int_job_aliases_resolved
),
jobs as (
    select job_key, start_at, end_at from wh.intermediate.int_jobs_attributed
    where start_at is not null and end_at is not null
),
attributed as (
    select aliases.job_key, samples.hostname, samples.gpu, samples."timestamp" as sampled_at, jobs.end_at,
           samples.DCGM_FI_PROF_GR_ENGINE_ACTIVE as gr, samples.DCGM_FI_PROF_PIPE_TENSOR_ACTIVE as tensor,
           samples.DCGM_FI_PROF_NVLINK_TX_BYTES + samples.DCGM_FI_PROF_NVLINK_RX_BYTES as nvlink,
           lead(samples."timestamp") over (
               partition by aliases.job_key, samples.hostname, samples.gpu order by samples."timestamp"
           ) as next_at
    from samples
    join aliases on samples.job_id = aliases.alias_job_id
        and (aliases.held_from is null or samples."timestamp" >= aliases.held_from)
        and (aliases.held_until is null or samples."timestamp" < aliases.held_until)
    join jobs on jobs.job_key = aliases.job_key
        and samples."timestamp" >= jobs.start_at and samples."timestamp" < jobs.end_at
),
classified as (
    select job_key,
           least(coalesce(date_diff('second', sampled_at, next_at), $interval), $interval * $gap,
                 date_diff('second', sampled_at, end_at)) as seconds,
           case when nvlink >= $comm_nvlink and tensor < $comm_tensor then 'comm_wait'
                when gr >= $effective_gr then 'effective_compute' else 'idle' end as tier
    from attributed
    where next_at is null or next_at > sampled_at
)
select job_key, count(*) as samples,
       sum(case when tier = 'effective_compute' then seconds else 0 end) as effective_compute_gpu_seconds,
       sum(case when tier = 'comm_wait' then seconds else 0 end) as comm_wait_gpu_seconds,
       sum(case when tier = 'idle' then seconds else 0 end) as idle_gpu_seconds
from classified
group by job_key
"""
PARAMETERS = {
    "interval": "sample_interval_seconds",
    "gap": "max_gap_factor",
    "comm_nvlink": "comm_wait_min_nvlink_bytes_per_second",
    "comm_tensor": "comm_wait_max_tensor_active",
    "effective_gr": "effective_min_gr_engine_active",
}
FIGURES = "job_key, samples, effective_compute_gpu_seconds, comm_wait_gpu_seconds, idle_gpu_seconds"


def baseline(warehouse: Path, files: str, memory_limit: str, out: Path) -> None:
    """The bare query (v1's tier rule, the demo's contract version), into ``out``; the warehouse is read-only."""
    con = duckdb_session.connect(str(out))
    con.execute(f"set memory_limit = '{memory_limit}'")
    con.execute(f"attach '{warehouse}' as wh (read_only)")
    values = dict(
        con.execute(
            "select parameter_name, parameter_value from wh.staging.stg_contract__parameters "
            "where contract_version = 'v1'"
        ).fetchall()
    )
    params = {key: float(values[name]) for key, name in PARAMETERS.items()}
    # Only the jobs and their ids come from the warehouse; the samples are read from the landing files.
    con.execute(BASELINE_SQL, {**params, "files": files})
    con.close()


def forget_built(warehouse: Path) -> None:
    """Drop the inputs the incremental device-sample tables keep of their last build: the next build rebuilds every
    job of int_device_samples_tiered and every day of int_gpu_share_days."""
    con = duckdb_session.connect(str(warehouse))
    for table in ("int_device_samples_tiered_built", "int_gpu_share_days_built"):
        con.execute(f"drop table if exists intermediate.{table}")
    con.close()


def forget_loaded(warehouse: Path, source: str) -> None:
    """Forget which of ``source``'s files were loaded (``ops.loaded_files``): the next night reads and checks every
    file of it again, as a first night does, instead of keeping the rows the setup night loaded."""
    con = duckdb_session.connect(str(warehouse))
    con.execute("delete from ops.loaded_files where source = ?", [source])
    con.close()


def measured(command: list[str], env: dict[str, str]) -> dict[str, float]:
    """Run ``command`` in a process of its own: wall and CPU seconds, peak RSS in MB (the largest process), of its
    whole process tree (the fork server's dbt builds too: ``descendants``)."""
    probe = (
        f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "import json, resource, subprocess, time\n"
        "from descendants import adopt_orphans, reap_orphans\n"
        "adopt_orphans()\n"
        "started = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
        "wall = time.perf_counter() - started\n"
        "reap_orphans()\n"
        "me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))\n"
        "print(json.dumps({'wall': wall, 'cpu': kids.ru_utime + kids.ru_stime,"
        " 'rss_mb': max(me.ru_maxrss, kids.ru_maxrss) / 1024}))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, *command], env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def dbt_split(home: Path) -> dict[str, float]:
    """Seconds dbt spent in models and in data tests (summed over dbt's threads) in the newest run's build, as its
    run_results.json says, and the build's elapsed wall time: how much of the telemetry's dbt time is validation.
    The run is the newest in the Dagster home ``home``; its build folder is named after it."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs(limit=1)
    builds = sorted(
        DBT_TARGET.glob(f"cost_models-{run.run_id[:7]}-*/run_results.json"), key=lambda p: p.stat().st_mtime
    )
    if not builds:
        raise SystemExit(f"the timed run {run.run_id} wrote no dbt run_results.json")
    results = json.loads(builds[-1].read_text())
    split = {"elapsed": results["elapsed_time"], "model": 0.0, "test": 0.0}
    for node in results["results"]:
        kind = node["unique_id"].split(".")[0]
        if kind in split:
            split[kind] += node["execution_time"]
    return split


def check_equal(warehouse: Path, out: Path) -> int:
    """Jobs whose figures differ between int_job_utilization_tiered and the baseline (must be 0); raises if any."""
    con = duckdb_session.connect(str(out), read_only=True)
    con.execute(f"attach '{warehouse}' as wh (read_only)")
    differ = con.execute(
        f"select count(*) from ((select {FIGURES} from wh.intermediate.int_job_utilization_tiered "
        f"except all select {FIGURES} from tiered) union all (select {FIGURES} from tiered "
        f"except all select {FIGURES} from wh.intermediate.int_job_utilization_tiered))"
    ).fetchone()[0]
    jobs = con.execute("select count(*) from tiered").fetchone()[0]
    con.close()
    if differ:
        raise SystemExit(f"the baseline's per-job figures differ from int_job_utilization_tiered in {differ} rows")
    return jobs


def set_up(landing: Path, warehouse: Path, samples: int, env: dict[str, str]) -> tuple[int, float]:
    """Write the landing folder and its samples, then run one whole night on it: (samples written, the night's wall
    seconds). The samples are generated in a process of its own: DuckDB's sort of them would otherwise raise this
    process's peak RSS, which every process it starts inherits (Linux keeps the high-water mark across fork and
    exec), and the timed runs' peaks would be this one's."""
    write_demo_landing(landing)
    generated = subprocess.run(
        [sys.executable, __file__, "--samples", str(samples), "--generate", str(landing / "telemetry")],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    started = time.perf_counter()
    subprocess.run(
        [str(BIN / "cost-pipeline"), "run", "--landing", str(landing), "--warehouse", str(warehouse)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return int(generated.stdout.strip().splitlines()[-1]), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=2_000_000)
    parser.add_argument("--memory-limit", default="3GiB")
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one, removed afterwards)")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="with --dir: keep the files and the warehouse an earlier run of the same --samples left there (no new "
        "files, no setup night)",
    )
    parser.add_argument("--baseline", nargs=3, metavar=("WAREHOUSE", "FILES", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--generate", type=Path, metavar="TELEMETRY", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        warehouse, files, out = args.baseline
        baseline(Path(warehouse), files, args.memory_limit, Path(out))
        return
    if args.generate:
        print(write_samples(args.generate, args.samples))
        return
    if args.reuse and args.dir is None:
        parser.error("--reuse needs --dir")
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-memory-"))
    try:
        landing, warehouse = work / "landing", work / "warehouse.duckdb"
        files = str(landing / "telemetry" / "*.parquet")
        env = {**os.environ, MEMORY_LIMIT_VARIABLE: args.memory_limit}
        env |= {"COST_LANDING_DIR": str(landing), "COST_WAREHOUSE": str(warehouse), "DAGSTER_HOME": str(work)}
        setup = work / "setup.json"  # the samples written and the setup night's wall time, for --reuse
        if args.reuse and setup.exists() and json.loads(setup.read_text())["requested"] == args.samples:
            samples, night = (json.loads(setup.read_text())[key] for key in ("samples", "night_s"))
        else:
            setup.unlink(missing_ok=True)  # a run that dies while writing leaves nothing to reuse
            samples, night = set_up(landing, warehouse, args.samples, env)
            setup.write_text(json.dumps({"requested": args.samples, "samples": samples, "night_s": night}))
        forget_built(warehouse)  # the night built the tier table: the timed run builds every job again
        forget_loaded(warehouse, "device_samples")  # and loads every sample file again
        pipeline = measured(
            [str(BIN / "dagster"), "asset", "materialize", "-m", "cost_pipeline.definitions"]
            + ["--select", TELEMETRY_ASSETS],
            env,
        )
        split = dbt_split(work)
        out = work / "baseline.duckdb"
        out.unlink(missing_ok=True)  # an earlier run's, with --reuse
        bare = measured(
            [sys.executable, __file__, "--memory-limit", args.memory_limit]
            + ["--baseline", str(warehouse), files, str(out)],
            env,
        )
        jobs = check_equal(warehouse, out)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(
        f"{samples:,} device samples, {jobs} jobs, memory_limit {args.memory_limit}; per-job figures equal; the "
        f"setup night (every asset, not timed below{', an earlier run' if args.reuse else ''}) took {night:.0f} s"
    )
    print_ratio_table(("pipeline (ingest + dbt, telemetry)", pipeline), ("bare DuckDB SQL", bare))
    print(
        f"dbt build {split['elapsed']:.1f} s; summed over dbt's threads: models {split['model']:.1f} s, data tests "
        f"{split['test']:.1f} s (the ingest's contract checks are part of its load and not counted here)"
    )


def print_ratio_table(pipeline: tuple[str, dict], bare: tuple[str, dict]) -> None:
    """The two runs' wall, CPU and peak RSS as a Markdown table, then the pipeline's ratio to the bare baseline."""
    print("| run | wall s | CPU s | peak RSS MB |")
    print("|---|---|---|---|")
    for name, figures in (pipeline, bare):
        print(f"| {name} | {figures['wall']:.1f} | {figures['cpu']:.1f} | {figures['rss_mb']:.0f} |")
    ratios = (pipeline[1][k] / bare[1][k] for k in ("wall", "cpu", "rss_mb"))
    print("| ratio | {:.1f}x | {:.1f}x | {:.1f}x |".format(*ratios))


if __name__ == "__main__":
    main()
