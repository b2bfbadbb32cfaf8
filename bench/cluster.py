"""A generated GPU cluster at any scale, as its tools would deliver it: the landing folder of ``--days`` days of it.

    ../.venv/bin/python cluster.py --gpus 5120 --interval 1s --days 1 --out /tmp/cluster

On top of the demo's landing folder (its registry, ledgers, serving and the rest), it writes for every day:

- ``scheduler/sacct_<day>.txt``: Slurm ``sacct --parsable2`` rows of the day's jobs. The hosts (``gen-0000`` ...,
  8 GPUs each) are split into groups of 1, 2, 4 or 8 nodes (the same groups every day); each group runs jobs back
  to back through the day, 1 to 8 hours long, the last one ending at midnight; each job is batch B-7 or B-8,
  training;
- ``telemetry/samples_<day>_<part>.parquet``: every GPU's DCGM sample every ``--interval`` while its job runs, with
  the demo's tier pattern by minute of the job (idle while setting up, every 10th minute waiting on NVLink), one file
  per ``--hosts-per-file`` hosts;
- ``steps/steps_<day>.jsonl``: each job's training steps, 8 to 15 minutes each after the 10 minutes of set-up, one
  in twenty discarded (``rollback``);

and, for all days together, ``--requests-per-gpu-day`` inference requests per GPU and day (the demo's requests
repeated through November, bench_requests.py's generator), and a purchase of the generated servers in the
procurement ledger with the facility's costs grown in proportion to the servers.

Everything follows from ``--seed``: the same arguments write the same rows. Samples are written by DuckDB straight
from ``range()`` into Parquet, a file at a time under a memory limit, so no day is held in memory. It prints one JSON
line: the counts of what it wrote.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from bench_memory import DEMO_PATTERN
from bench_month_of_nights import SACCT_HEADER, refuse_days_after_today
from bench_requests import write_requests

from cost_pipeline import duckdb_session
from cost_pipeline.demo import BATCHES, SETUP_MINUTES, write_demo_landing

FIRST_DAY = datetime(2026, 11, 1)
GPUS_PER_HOST = 8
GROUP_NODES = (1, 2, 4, 8)
JOB_HOURS = (1, 2, 3, 4, 6, 8)
GENERATED_BATCHES = ("B-7", "B-8")
STAMP = "%Y-%m-%dT%H:%M:%S"
DEMO_SERVERS = 2  # the demo's purchase: two 8-GPU servers, the facility ledger's costs are theirs


@dataclass(frozen=True)
class Job:
    job_id: int
    hosts: tuple[str, ...]
    start: datetime
    end: datetime
    batch_id: str


def parse_interval(text: str) -> int:
    """``1s``, ``60s``, ``1m`` or ``60`` as whole seconds (at least 1)."""
    match = re.fullmatch(r"(\d+)\s*([sm]?)", text.strip())
    if not match or int(match.group(1)) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: an interval is a whole number of seconds, e.g. 1s, 60s or 1m")
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1)


def host_groups(hosts: int, seed: int) -> list[tuple[str, ...]]:
    """The hosts ``gen-0000``... split into consecutive groups of 1, 2, 4 or 8 nodes (a multi-node job's nodes)."""
    rng = random.Random(f"{seed}-groups")
    groups, first = [], 0
    while first < hosts:
        size = min(rng.choice(GROUP_NODES), hosts - first)
        groups.append(tuple(f"gen-{host:04d}" for host in range(first, first + size)))
        first += size
    return groups


def file_groups(groups: list[tuple[str, ...]], hosts_per_file: int) -> list[set[tuple[str, ...]]]:
    """The groups whose samples share a file: consecutive groups, until they hold ``hosts_per_file`` hosts."""
    files: list[set[tuple[str, ...]]] = [set()]
    hosts = 0
    for group in groups:
        if hosts >= hosts_per_file:
            files.append(set())
            hosts = 0
        files[-1].add(group)
        hosts += len(group)
    return files


def day_jobs(groups: list[tuple[str, ...]], day: int, seed: int, first_day: datetime) -> list[Job]:
    """Every group's jobs of day ``day``, back to back from midnight to midnight; ids unique across days."""
    rng = random.Random(f"{seed}-day-{day}")
    start_of_day = first_day + timedelta(days=day)
    midnight = start_of_day + timedelta(days=1)
    jobs = []
    for group in groups:
        at = start_of_day
        while at < midnight:
            end = min(at + timedelta(hours=rng.choice(JOB_HOURS)), midnight)
            jobs.append(Job(7_000_000 + day * 100_000 + len(jobs), group, at, end, rng.choice(GENERATED_BATCHES)))
            at = end
    return jobs


def sacct_lines(jobs: list[Job]) -> list[str]:
    lines = [SACCT_HEADER]
    for job in jobs:
        nodes, seconds = len(job.hosts), int((job.end - job.start).total_seconds())
        tres = f"billing={64 * nodes},cpu={64 * nodes},gres/gpu={GPUS_PER_HOST * nodes},mem={512 * nodes}G,node={nodes}"
        submitted = (job.start - timedelta(minutes=5)).strftime(STAMP)
        lines.append(
            f"{job.job_id}|{job.job_id}|gen|post-training|gpu|trainer|*|COMPLETED|0:0|0:0|None||0|{submitted}|"
            f"{submitted}|{job.start.strftime(STAMP)}|{job.end.strftime(STAMP)}|"
            f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}|1-00:00:00|{nodes}|"
            f"{','.join(job.hosts)}|{tres}|{tres}|batch={job.batch_id};phase=training;reason=planned_experiment|"
        )
    return lines


def step_records(jobs: list[Job], seed: int, day: int) -> list[dict[str, object]]:
    """Each job's steps after its set-up, 8 to 15 minutes each, while they fit in the job."""
    rng = random.Random(f"{seed}-steps-{day}")
    versions = {b["batch_id"]: (b["config_version"], b["data_version"]) for b in BATCHES}
    records = []
    for job in jobs:
        at, step = job.start + timedelta(minutes=SETUP_MINUTES), 1
        while (end := at + timedelta(seconds=rng.randrange(480, 901))) <= job.end:
            config_version, data_version = versions[job.batch_id]
            discarded = rng.random() < 0.05
            records.append(
                {
                    "batch_id": job.batch_id,
                    "job_id": str(job.job_id),
                    "step": step,
                    "started_at": at.strftime(STAMP),
                    "ended_at": end.strftime(STAMP),
                    "committed": True,
                    "discarded_reason": "rollback" if discarded else None,
                    "samples": 512,
                    "tokens": 1_000_000,
                    "config_version": config_version,
                    "data_version": data_version,
                }
            )
            at, step = end, step + 1
    return records


def write_samples(path: Path, jobs: list[Job], interval: int, memory_limit: str) -> int:
    """One Parquet file of ``jobs``' samples (each job's hosts x 8 GPUs, every ``interval`` seconds); returns rows."""
    con = duckdb_session.connect()
    con.execute(f"set memory_limit = '{memory_limit}'")
    con.execute("create table placements (label varchar, host varchar, start_at timestamp, seconds bigint)")
    con.executemany(
        "insert into placements values (?, ?, ?, ?)",
        [
            (str(job.job_id), host, job.start, int((job.end - job.start).total_seconds()))
            for job in jobs
            for host in job.hosts
        ],
    )
    con.execute(
        f"""
        copy (
            select start_at + to_seconds(s) as "timestamp", host as hostname, cast(g as integer) as gpu,
                   label as job_id,
                   {DEMO_PATTERN}
            from (
                select label, host, start_at, s, s // 60 as m
                from placements, range(0, seconds, {interval}) as offsets(s)
            ), range({GPUS_PER_HOST}) as gpus(g)
        ) to '{path}' (format parquet)
        """
    )
    (rows,) = con.execute(f"select count(*) from '{path}'").fetchone()
    con.close()
    return rows


def grow_ledgers(landing: Path, hosts: int) -> None:
    """The generated servers bought like the demo's, and the facility's monthly costs grown in proportion."""
    with (landing / "ledger" / "purchases.csv").open("a", newline="", encoding="utf-8") as purchases:
        csv.writer(purchases).writerow(
            ["P-GEN", "2026-01-01", "gpu_server", "8x H100 SXM server (generated cluster)", hosts, "457798.00", "USD"]
            + [GPUS_PER_HOST, 3, "0.00"]
        )
    facility = landing / "ledger" / "facility.csv"
    with facility.open(newline="", encoding="utf-8") as source:
        rows = list(csv.DictReader(source))
    for row in rows:
        cents = round(float(row["amount"]) * 100) * (DEMO_SERVERS + hosts) // DEMO_SERVERS
        row["amount"] = f"{cents // 100}.{cents % 100:02d}"
    with facility.open("w", newline="", encoding="utf-8") as target:
        writer = csv.DictWriter(target, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def write_cluster(
    landing: Path,
    gpus: int,
    interval: int,
    days: int,
    seed: int = 7,
    first_day: datetime = FIRST_DAY,
    hosts_per_file: int = 64,
    requests_per_gpu_day: int = 2_000,
    memory_limit: str = "2GiB",
) -> dict[str, int]:
    """Write the landing folder (the demo's, plus the generated cluster); returns the counts of what it wrote."""
    if gpus < GPUS_PER_HOST or gpus % GPUS_PER_HOST:
        raise ValueError(f"--gpus {gpus}: a whole number of {GPUS_PER_HOST}-GPU hosts")
    write_demo_landing(landing)
    hosts = gpus // GPUS_PER_HOST
    groups = host_groups(hosts, seed)
    counts = {"gpus": gpus, "interval_s": interval, "days": days, "jobs": 0, "steps": 0, "samples": 0}
    for day in range(days):
        jobs = day_jobs(groups, day, seed, first_day)
        stamp = f"{first_day + timedelta(days=day):%Y-%m-%d}"
        (landing / "scheduler" / f"sacct_{stamp}.txt").write_text("\n".join(sacct_lines(jobs)) + "\n")
        steps = step_records(jobs, seed, day)
        (landing / "steps" / f"steps_{stamp}.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
        for part, chunk in enumerate(file_groups(groups, hosts_per_file)):
            path = landing / "telemetry" / f"samples_{stamp}_{part:03d}.parquet"
            counts["samples"] += write_samples(path, [j for j in jobs if j.hosts in chunk], interval, memory_limit)
        counts["jobs"] += len(jobs)
        counts["steps"] += len(steps)
    requests = requests_per_gpu_day * gpus * days
    counts["requests"] = write_requests(landing / "requests", requests) if requests else 0
    grow_ledgers(landing, hosts)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=5120, help="GPUs of the cluster, 8 per host (default 5120)")
    parser.add_argument("--interval", type=parse_interval, default=1, help="DCGM sample interval (default 1s)")
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--first-day", type=datetime.fromisoformat, default=FIRST_DAY)
    parser.add_argument("--hosts-per-file", type=int, default=64)
    parser.add_argument("--requests-per-gpu-day", type=int, default=2_000)
    parser.add_argument("--out", type=Path, required=True, help="the landing folder to write (must not exist)")
    args = parser.parse_args()
    refuse_days_after_today(parser, args.first_day, args.days)
    if args.out.exists():
        parser.error(f"--out {args.out}: exists; the generator writes a new landing folder")
    counts = write_cluster(
        args.out,
        args.gpus,
        args.interval,
        args.days,
        args.seed,
        args.first_day,
        args.hosts_per_file,
        args.requests_per_gpu_day,
    )
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
