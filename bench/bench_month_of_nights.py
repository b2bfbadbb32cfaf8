"""Benchmark: a run of nightly runs, each bringing one more day of a generated cluster, timed as nights.

Run on demand (not part of the test suite):

    cd bench && ../.venv/bin/python bench_month_of_nights.py --days 10 --hosts 60

On top of the demo's landing folder it generates, for each day from ``--first-day`` (2026-11-11), ``--hosts`` hosts of
8 GPUs, each running ``--jobs-per-day`` jobs back to back through the day (Slurm ``sacct --parsable2`` rows, batch B-7,
training), and their device samples at the contract's 60 s interval with the demo's tier pattern (Parquet, one file per
day): ``hosts x 8 x 1,440`` samples a day. Night 1 loads the demo and day 1; each later night adds the next day's sacct
file and sample file, and runs the whole nightly job (``cost-pipeline run``, start-up included) on the same warehouse.
The last night is run twice, back to back: as it is, and on a copy of the warehouse from before it whose incremental
device-sample tables (the tier table, the GPU share days) have to be built whole (their kept inputs dropped), and the
two warehouses' tables and fct_gpu_shares must be equal, or the benchmark fails. It prints each night's wall time and
its ratio to night 1 (issue 15: days 2 to 30 each within 1.2x of day 1).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench_incremental_night import TIERED, equal_tiers
from bench_memory import BIN, DEMO_PATTERN, forget_built, measured

from cost_pipeline import duckdb_session
from cost_pipeline.demo import write_demo_landing

FIRST_DAY = datetime(2026, 11, 11)
# The table incremental by day, and the mart that closes its days: equal to a full build's on the last night.
INCREMENTAL_BY_DAY = ("intermediate.int_gpu_share_days", "marts.fct_gpu_shares")
SACCT_HEADER = (
    "JobID|JobIDRaw|JobName|Account|Partition|User|WCKey|State|ExitCode|DerivedExitCode|Reason|FailedNode|Restarts|"
    "Submit|Eligible|Start|End|Elapsed|Timelimit|NNodes|NodeList|ReqTRES|AllocTRES|Comment|AdminComment"
)
TRES = "billing=64,cpu=64,gres/gpu=8,mem=512G,node=1"


def write_day(
    held: Path, day: int, hosts: int, jobs_per_day: int, first_day: datetime = FIRST_DAY
) -> tuple[Path, Path]:
    """Day ``day`` (from ``first_day``)'s sacct file and device-sample file under ``held``: every host runs its jobs
    back to back."""
    start_of_day = first_day + timedelta(days=day)
    length = timedelta(days=1) / jobs_per_day
    jobs = []
    for host in range(hosts):
        for number in range(jobs_per_day):
            job_id = 900_000 + day * 10_000 + host * jobs_per_day + number
            start = start_of_day + number * length
            jobs.append((str(job_id), f"gen-{host:04d}", start, start + length))
    stamp = "%Y-%m-%dT%H:%M:%S"
    sacct = held / f"sacct_{start_of_day:%Y-%m-%d}.txt"
    lines = [SACCT_HEADER]
    for job_id, host, start, end in jobs:
        elapsed = int((end - start).total_seconds())
        lines.append(
            f"{job_id}|{job_id}|gen|post-training|gpu|trainer|*|COMPLETED|0:0|0:0|None||0|"
            f"{(start - timedelta(minutes=5)).strftime(stamp)}|{(start - timedelta(minutes=5)).strftime(stamp)}|"
            f"{start.strftime(stamp)}|{end.strftime(stamp)}|{elapsed // 3600:02d}:{elapsed // 60 % 60:02d}:00|"
            f"1-00:00:00|1|{host}|{TRES}|{TRES}|batch=B-7;phase=training;reason=planned_experiment|"
        )
    sacct.write_text("\n".join(lines) + "\n", encoding="utf-8")
    samples = held / f"samples_{start_of_day:%Y-%m-%d}.parquet"
    con = duckdb_session.connect()
    con.execute("create table jobs (label varchar, host varchar, start_at timestamp, end_at timestamp)")
    con.executemany("insert into jobs values (?, ?, ?, ?)", jobs)
    con.execute(
        f"""
        copy (
            select start_at + to_minutes(m) as "timestamp", host as hostname, cast(g as integer) as gpu,
                   label as job_id,
                   {DEMO_PATTERN}
            from jobs, range(cast(date_diff('minute', start_at, end_at) as bigint)) as minutes(m), range(8) as gpus(g)
            order by "timestamp", hostname, gpu
        ) to '{samples}' (format parquet)
        """
    )
    con.close()
    return sacct, samples


def night(landing: Path, warehouse: Path, env: dict[str, str]) -> dict[str, float]:
    command = [str(BIN / "cost-pipeline"), "run", "--landing", str(landing), "--warehouse", str(warehouse)]
    return measured(command, env)


def refuse_days_after_today(parser: argparse.ArgumentParser, first_day: datetime, days: int) -> None:
    """Stop with a clear error when the generated days do not all lie in the past: the ingest quarantines a sacct
    time after the night that reads it (``end_at.after_night``, cost_pipeline/night_clock.py)."""
    last_end = first_day + timedelta(days=days)
    if last_end > datetime.now(UTC).replace(tzinfo=None):
        parser.error(
            f"--first-day {first_day:%Y-%m-%d} --days {days}: the days end {last_end:%Y-%m-%d}, after today; their "
            "jobs would be quarantined as times after the night (end_at.after_night). Pass an earlier --first-day."
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--hosts", type=int, default=60)
    parser.add_argument("--jobs-per-day", type=int, default=4)
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one, removed afterwards)")
    parser.add_argument(
        "--first-day",
        type=datetime.fromisoformat,
        default=FIRST_DAY,
        help=f"the first generated day (default {FIRST_DAY:%Y-%m-%d}); 30 days from 2026-11-01 stay in the past",
    )
    args = parser.parse_args()
    if args.days < 2:
        parser.error("--days: at least 2 (the last night is compared with a full build of it)")
    refuse_days_after_today(parser, args.first_day, args.days)
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-month-of-nights-"))
    rows = []
    try:
        landing = write_demo_landing(work / "landing")
        held = work / "held"
        held.mkdir()
        warehouse, full = work / "warehouse.duckdb", work / "full.duckdb"
        env = {**os.environ, "DAGSTER_HOME": str(work / "dagster")}
        for day in range(args.days):
            sacct, samples = write_day(held, day, args.hosts, args.jobs_per_day, args.first_day)
            shutil.copy(sacct, landing / "scheduler" / sacct.name)
            shutil.copy(samples, landing / "telemetry" / samples.name)
            if day == args.days - 1:
                shutil.copy(warehouse, full)
                forget_built(full)
            rows.append((day + 1, night(landing, warehouse, env)))
            print(f"night {day + 1}: {rows[-1][1]['wall']:.1f} s", flush=True)  # progress; the table is below
        whole = night(landing, full, env)
        tiered = equal_tiers(warehouse, full, (TIERED, *INCREMENTAL_BY_DAY))
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    per_day = args.hosts * 8 * 1440
    print(f"{args.days} nights of {per_day:,} generated device samples a day ({args.hosts} hosts x 8 GPUs);")
    print(
        f"the last night's tier table ({tiered:,} samples), GPU share days and fct_gpu_shares equal to a full build's"
    )
    print("| night | wall s | CPU s | peak RSS MB | / night 1 |")
    print("|---|---|---|---|---|")
    first = rows[0][1]["wall"]
    for number, figures in rows:
        print(
            f"| {number} | {figures['wall']:.1f} | {figures['cpu']:.1f} | {figures['rss_mb']:.0f} "
            f"| {figures['wall'] / first:.2f}x |"
        )
    print(
        f"| {args.days}, built whole | {whole['wall']:.1f} | {whole['cpu']:.1f} | {whole['rss_mb']:.0f} "
        f"| {whole['wall'] / first:.2f}x |"
    )


if __name__ == "__main__":
    main()
