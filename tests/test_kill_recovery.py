"""kill -9 at 8 points of a night (3 during ingest, 5 during dbt), two kills in a row (the re-run is killed
again), then a night that finishes: the warehouse reaches the clean run's tables (raw, marts and history), and no
file ledger entry is ever left without its rows, after any kill.

A kill point is a moment in the night's own progress, read from its output, not a number of seconds after launch:
on a busy machine a timer fires while Python is still importing, and the kill proves nothing. Ingest kills land
just after a chosen ingest step starts; dbt kills land after a random share of dbt's "n of N" node lines, or
just after dbt starts (while it parses). Every night runs on the same warehouse path, so the runs reuse the
prepared manifest and the build's partial-parse file (cost_pipeline.dbt_setup) instead of parsing the dbt
project again for every kill.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.cli import run_pipeline
from cost_pipeline.defs.ingest import ingest_assets
from cost_pipeline.fingerprint import table_fingerprints

SCHEMAS = ("raw", "marts", "history")
INGEST_KILLS = 3
DBT_KILLS = 5
DBT_STARTED = re.compile(r"Running dbt command")
FULL_PARSE = re.compile(r"Unable to do partial parsing")
DBT_NODE = re.compile(r"\b(\d+) of (\d+) (START|OK|PASS|WARN|ERROR|FAIL|SKIP)\b")


@dataclass(frozen=True)
class KillPoint:
    """Kill ``delay`` seconds after the night prints the line that marks it."""

    description: str
    marker: re.Pattern
    delay: float
    during_ingest: bool
    dbt_share: float | None = None  # with DBT_NODE: the share of dbt's nodes done whose line marks the point

    def reached(self, line: str) -> bool:
        found = self.marker.search(line)
        if found is None:
            return False
        return self.dbt_share is None or int(found.group(1)) >= self.dbt_share * int(found.group(2))


def _kill_points(rng: random.Random) -> list[KillPoint]:
    steps = sorted(asset.node_def.name for asset in ingest_assets)
    ingest = [
        KillPoint(
            f"ingest step {step}",
            re.compile(rf'STEP_START - Started execution of step "{re.escape(step)}"'),
            rng.uniform(0.0, 0.2),
            during_ingest=True,
        )
        for step in rng.sample(steps, INGEST_KILLS)
    ]
    dbt = [KillPoint("dbt start (parsing)", DBT_STARTED, rng.uniform(0.0, 2.0), during_ingest=False)]
    dbt += [
        KillPoint(f"dbt after {share:.0%} of its nodes", DBT_NODE, rng.uniform(0.0, 0.2), False, share)
        for share in sorted(rng.uniform(0.0, 1.0) for _ in range(DBT_KILLS - 1))
    ]
    return ingest + dbt


def _fingerprints(warehouse: Path, schemas: tuple[str, ...] = SCHEMAS) -> dict[str, dict[str, str]]:
    return {schema: table_fingerprints(warehouse, schema) for schema in schemas}


def _connect_after_kill(warehouse: Path, timeout: float = 120.0) -> duckdb.DuckDBPyConnection:
    """The killed night's file lock may outlive its process by a moment while the kernel tears it down."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return duckdb.connect(str(warehouse))
        except duckdb.IOException as locked:
            if "lock" not in str(locked) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _ledger_matches_rows(warehouse: Path) -> None:
    con = _connect_after_kill(warehouse)
    try:
        tables = {
            t
            for (t,) in con.execute(
                "select table_name from information_schema.tables where table_schema = 'raw'"
            ).fetchall()
        }
        if "ingested_files" not in tables:
            return
        for source, staged, quarantined in con.execute(
            "select source, sum(rows_staged), sum(rows_quarantined) from raw.ingested_files group by source"
        ).fetchall():
            assert source in tables, source
            assert con.execute(f'select count(*) from raw."{source}"').fetchone()[0] == staged, source
            assert (
                con.execute("select count(*) from raw.quarantine where source = ?", [source]).fetchone()[0]
                == quarantined
            ), source
    finally:
        con.close()


def _default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _killed_run(landing: Path, warehouse: Path, point: KillPoint) -> bool:
    """Run the night in its own process and kill -9 it (with its dbt child) at ``point``; fail if it ends first.
    Returns whether dbt parsed the whole project (instead of reusing the last build's parse)."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cost_pipeline.cli",
            "run",
            "-v",
            "--landing",
            str(landing),
            "--warehouse",
            str(warehouse),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
        preexec_fn=_default_signals,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    reached = threading.Event()
    full_parse = threading.Event()

    def read() -> None:  # keeps draining the pipe so the night never stalls on it
        for line in process.stdout:
            if FULL_PARSE.search(line):
                full_parse.set()
            if not reached.is_set() and point.reached(line):
                reached.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    while not reached.is_set() and process.poll() is None:
        reached.wait(0.05)
    if reached.is_set():
        time.sleep(point.delay)
    killed = process.poll() is None
    if killed:
        os.killpg(process.pid, signal.SIGKILL)  # the run and its dbt child, like kill -9 of the night
    process.wait(timeout=30)
    _wait_until_gone(process.pid)  # dbt, orphaned, may still hold the warehouse's lock
    reader.join(timeout=30)
    assert reached.is_set() and killed, f"the night ended before the kill point ({point.description})"
    return full_parse.is_set()


def _wait_until_gone(group: int, timeout: float = 120.0) -> None:
    """Until no live process is left in the process group (a zombie holds no file lock)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = False
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z" and int(fields[2]) == group:
                alive = True
                break
        if not alive:
            return
        time.sleep(0.05)
    raise AssertionError(f"process group {group} still alive {timeout} s after kill -9")


def _clear(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()


# The 8 kill points, shuffled into four chains of two kills. A chain kills a night, kills the re-run that recovers
# from it, and then lets a night finish: recovery from a kill is itself killed, as it is
# when an operator's retry dies on the same broken node. Each test runs two chains on one warehouse path, the first
# from an empty warehouse and the second from last night's finished one, so two workers share the four chains, and
# the second chain's nights must reuse the dbt parse the first chain's finished night left for that path.
CHAINS = 4
TESTS = {"chains_1_and_2": (0, 1), "chains_3_and_4": (2, 3)}


def _chains() -> list[list[KillPoint]]:
    rng = random.Random(9)
    points = _kill_points(rng)
    assert len(points) == INGEST_KILLS + DBT_KILLS
    rng.shuffle(points)
    size = len(points) // CHAINS
    return [points[start : start + size] for start in range(0, len(points), size)]


def test_every_kind_of_kill_point_is_in_some_chain():
    chains = _chains()
    kinds = [point.during_ingest for chain in chains for point in chain]
    assert len(kinds) == INGEST_KILLS + DBT_KILLS and sum(kinds) == INGEST_KILLS
    assert {number for numbers in TESTS.values() for number in numbers} == set(range(CHAINS))


@pytest.mark.parametrize("numbers", TESTS.values(), ids=TESTS.keys())
def test_kill_nine_in_a_row_then_rerun_reaches_the_clean_tables(demo_run, tmp_path, numbers):
    assert demo_run.succeeded
    clean = _fingerprints(demo_run.warehouse)
    night = tmp_path / "night"
    warehouse = night / demo_run.warehouse.name  # one path for every night: its dbt parse state is reused
    chains = _chains()
    built_here = False  # whether a whole night has finished on this warehouse path
    for number in numbers:
        _clear(night)
        if built_here:  # the second chain starts from last night's finished warehouse
            shutil.copyfile(demo_run.warehouse, warehouse)
        killed_at = []
        for point in chains[number]:
            full_parse = _killed_run(demo_run.landing, warehouse, point)
            assert not (built_here and full_parse), "a night on this warehouse must reuse the last build's dbt parse"
            killed_at.append(point.description)
            if warehouse.exists():
                _ledger_matches_rows(warehouse)
        assert run_pipeline(demo_run.landing, warehouse), f"re-run after kills at {killed_at}"
        _ledger_matches_rows(warehouse)
        assert _fingerprints(warehouse) == clean, f"kills at {killed_at}"
        built_here = True
