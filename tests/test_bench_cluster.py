"""The cluster generator of the benchmarks (bench/cluster.py): deterministic by seed, and what it writes is what a
real cluster of that size delivers, so the benchmark's figures are about this pipeline and not about a generator
that writes too little or rows the pipeline would quarantine."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import cluster  # noqa: E402

from cost_pipeline.ingest.scheduler import parse_sacct_record  # noqa: E402

DAY = datetime(2026, 11, 1)


@pytest.mark.parametrize(("text", "seconds"), [("1s", 1), ("60s", 60), ("1m", 60), ("15", 15)])
def test_interval_is_read_in_seconds(text: str, seconds: int) -> None:
    assert cluster.parse_interval(text) == seconds


@pytest.mark.parametrize("text", ["0s", "1h", "1.5s", "", "s"])
def test_an_interval_that_is_not_whole_seconds_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="whole number of seconds"):
        cluster.parse_interval(text)


def test_every_host_is_in_one_group_and_every_group_is_busy_from_midnight_to_midnight() -> None:
    groups = cluster.host_groups(640, seed=7)
    hosts = [host for group in groups for host in group]
    assert hosts == [f"gen-{h:04d}" for h in range(640)]
    assert {len(group) for group in groups} <= set(cluster.GROUP_NODES)
    jobs = cluster.day_jobs(groups, 1, seed=7, first_day=DAY)
    for group in groups:
        mine = [job for job in jobs if job.hosts == group]
        assert mine[0].start == DAY + timedelta(days=1)
        assert all(a.end == b.start for a, b in zip(mine, mine[1:], strict=False))
        assert mine[-1].end == DAY + timedelta(days=2)
    other_day = cluster.day_jobs(groups, 2, seed=7, first_day=DAY)
    assert not {job.job_id for job in jobs} & {job.job_id for job in other_day}


def test_a_file_holds_the_samples_of_about_hosts_per_file_hosts_and_every_group_is_in_one():
    groups = cluster.host_groups(640, seed=7)
    files = cluster.file_groups(groups, 64)
    assert sorted(g for chunk in files for g in chunk) == sorted(groups)
    sizes = [sum(len(g) for g in chunk) for chunk in files]
    assert all(64 <= size < 64 + max(cluster.GROUP_NODES) for size in sizes[:-1]) and 0 < sizes[-1] < 72


def test_the_same_seed_writes_the_same_cluster_and_another_seed_another() -> None:
    def day(seed: int) -> list[cluster.Job]:
        return cluster.day_jobs(cluster.host_groups(80, seed), 0, seed, DAY)

    assert day(7) == day(7)
    assert day(7) != day(8)
    jobs = day(7)
    assert cluster.step_records(jobs, 7, 0) == cluster.step_records(jobs, 7, 0)


def test_sacct_rows_parse_as_the_scheduler_ingest_reads_them() -> None:
    jobs = cluster.day_jobs(cluster.host_groups(24, seed=3), 0, seed=3, first_day=DAY)
    header, *lines = cluster.sacct_lines(jobs)
    for job, line in zip(jobs, lines, strict=True):
        record = parse_sacct_record(dict(zip(header.split("|"), line.split("|"), strict=True)))
        assert record["job_id"] == str(job.job_id)
        assert (record["start_at"], record["end_at"]) == (job.start, job.end)
        assert record["elapsed_seconds"] == (job.end - job.start).total_seconds()
        assert record["gpus_allocated"] == cluster.GPUS_PER_HOST * len(job.hosts)
        assert record["node_list"] == ",".join(job.hosts)
        assert (record["batch_id"], record["phase"]) == (job.batch_id, "training")


def test_steps_follow_each_other_inside_their_job_after_its_set_up() -> None:
    jobs = cluster.day_jobs(cluster.host_groups(40, seed=5), 0, seed=5, first_day=DAY)
    steps = cluster.step_records(jobs, 5, 0)
    by_job = {str(job.job_id): job for job in jobs}
    for job_id, job in by_job.items():
        mine = [s for s in steps if s["job_id"] == job_id]
        assert [s["step"] for s in mine] == list(range(1, len(mine) + 1))
        assert mine[0]["started_at"] == (job.start + timedelta(minutes=10)).strftime(cluster.STAMP)
        assert all(a["ended_at"] == b["started_at"] for a, b in zip(mine, mine[1:], strict=False))
        assert mine[-1]["ended_at"] <= job.end.strftime(cluster.STAMP)
        assert all(s["batch_id"] == job.batch_id for s in mine)
    assert 0 < sum(s["discarded_reason"] == "rollback" for s in steps) < len(steps) / 5


def test_samples_cover_every_gpu_of_the_job_every_interval_with_the_tier_pattern(tmp_path: Path) -> None:
    job = cluster.Job(7_000_001, ("gen-0000", "gen-0001"), DAY, DAY + timedelta(minutes=12), "B-7")
    path = tmp_path / "samples.parquet"
    assert cluster.write_samples(path, [job], interval=1, memory_limit="1GiB") == 2 * 8 * 12 * 60
    con = duckdb.connect()
    per_gpu = con.execute(
        "select hostname, gpu, count(*), min(timestamp), max(timestamp), count(distinct timestamp) "
        f"from '{path}' group by all order by all"
    ).fetchall()
    assert [(h, g) for h, g, *_ in per_gpu] == [(h, g) for h in job.hosts for g in range(8)]
    last = job.end - timedelta(seconds=1)
    assert all(tuple(row[2:]) == (720, job.start, last, 720) for row in per_gpu)
    minute_9, minute_11 = (
        con.execute(
            "select distinct cast(DCGM_FI_PROF_GR_ENGINE_ACTIVE as double), DCGM_FI_PROF_NVLINK_TX_BYTES "
            f"from '{path}' where timestamp >= ? and timestamp < ?",
            [job.start + timedelta(minutes=m), job.start + timedelta(minutes=m + 1)],
        ).fetchall()
        for m in (9, 11)
    )
    assert minute_9 == [(0.02, 1.0e6)]  # set-up: idle
    assert minute_11 == [(0.85, 1.5e8)]  # effective compute
    assert con.execute(f"select distinct job_id from '{path}'").fetchall() == [("7000001",)]
