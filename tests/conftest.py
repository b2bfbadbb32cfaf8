"""Test session setup: the dbt manifest is prepared once, explicitly, before Dagster definitions are imported.

The suite runs on two workers (pytest-xdist, ``-n auto`` in pyproject.toml). The controller prepares the manifest
before it starts them; the demo night is run once per session and read by every worker; tests are handed out one at
a time, except those marked ``xdist_group`` (a module-scoped fixture worth sharing keeps its module on one worker).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.dbt_setup import prepare_manifest
from tests.helpers import Night, cli_night, query

# Test files whose tests run several whole nights (or sqlfluff over every model), longest first (their time on one
# worker, from the slowest tests of the last full run: README command 2 at 5887f9f). The workers take tests in this
# order (pyproject's --no-loadscope-reorder: a grouped file is not moved by its number of tests), so the long ones
# never run alone at the end while the other worker is idle; the many quick tests fill the gaps. The order only moves
# work: a file left off this list still runs, after those on it.
LONGEST_FIRST = (
    "test_spark.py",
    "test_kill_recovery.py",
    "test_redelivery.py",
    "test_dbt_failures.py",
    "test_style.py",
    "test_serving_end_to_end.py",
    "test_device_samples_incremental.py",
    "test_fuzz_ingest.py",
    "test_daemon_sensor.py",
    "test_running_jobs.py",
    "test_rerun_determinism.py",
    "test_device_sample_clusters.py",
    "test_unattributed_redelivery.py",
    "test_gl_journal.py",
    "test_dbt_setup.py",
    "test_kubernetes_events.py",
    "test_capacity_months.py",
    "test_publish.py",
    "test_cost_history.py",
    "test_retraction_history.py",
    "test_litellm_requests.py",
    "test_confidentiality.py",
    "test_partial_publish.py",
    "test_cli_nights.py",
    "test_focus_export.py",
    "test_batch_costs.py",
    "test_ui_end_to_end.py",
    "test_dbt_warm.py",
    "test_held_batch_rows.py",
    "test_shared_gpus_night.py",
    "test_mig_night.py",
    "test_hostile_names.py",
    "test_dg_cli.py",
    "test_focus_validator.py",
    "test_storage.py",
    "test_unpriced.py",
    "test_job_key.py",
    "test_waiting.py",
)


# A night commits to disk thousands of times (DuckDB's write-ahead log, Dagster's SQLite event log), and each commit
# waits for the disk (fsync): on a memory file system it does not. Where Linux has one with room for the suite's
# temporary folders (a passed test's folder is removed when it ends: pyproject's tmp_path_retention_policy), they go
# there; elsewhere, or under --basetemp or PYTEST_DEBUG_TEMPROOT, where pytest puts them. What a test proves does not
# change: no test cuts the power, and what a process killed with -9 wrote is in the kernel's hands either way.
MEMORY_FOLDER = Path("/dev/shm")
MEMORY_FOLDER_MIN_FREE = 8 * 2**30


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or config.option.basetemp or "PYTEST_DEBUG_TEMPROOT" in os.environ:
        return  # a worker's folder is inside the controller's
    try:
        free = os.statvfs(MEMORY_FOLDER)
    except OSError:
        return
    if free.f_bavail * free.f_frsize >= MEMORY_FOLDER_MIN_FREE and os.access(MEMORY_FOLDER, os.W_OK | os.X_OK):
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(MEMORY_FOLDER)  # pytest's root for pytest-of-<user>/pytest-<n>


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # a worker: the controller prepared it before starting us
        prepare_manifest()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # every worker collects the same order, which xdist hands out in turn
        rank = {name: number for number, name in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_refuse_ungrouped(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker under ``--dist loadgroup``, after pytest-xdist named each grouped test's group in its id: refuse to
    run if it could not (pytest 9.2 with pytest-xdist 3.8), rather than run each grouped module's nights twice."""
    if not hasattr(config, "workerinput") or not config.getvalue("loadgroup"):
        return
    ungrouped = [item.nodeid for item in items if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if ungrouped:
        raise pytest.UsageError(f"pytest-xdist's loadgroup did not group {ungrouped[0]}: see pytest's pin in pyproject")


@dataclass(frozen=True)
class DemoRun:
    landing: Path
    warehouse: Path
    succeeded: bool

    def query(self, sql: str, params: list | None = None) -> list[tuple]:
        return query(self.warehouse, sql, params)

    def row(self, sql: str, params: list | None = None) -> dict:
        con = duckdb.connect(str(self.warehouse), read_only=True)
        try:
            cursor = con.execute(sql, params or [])
            names = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        finally:
            con.close()
        assert len(rows) == 1, f"expected one row, got {len(rows)}"
        return dict(zip(names, rows[0], strict=True))

    def copy_to(self, copy: Path) -> Path:
        """A copy of this night in the new folder ``copy``, to change: its landing folder (``copy / "landing"``),
        warehouse (``copy / "warehouse.duckdb"``) and the Dagster home beside it."""
        assert self.succeeded
        copy.mkdir()
        shutil.copytree(self.landing, copy / "landing")
        shutil.copyfile(self.warehouse, copy / "warehouse.duckdb")
        shutil.copytree(self.warehouse.with_name("warehouse.dagster"), copy / "warehouse.dagster")
        return copy

    def night_with(self, copy: Path, files: dict[str, str]) -> Night:
        """A night on a copy of this one (``copy_to``) whose landing folder gains ``files`` (a path in it: the text)."""
        landing = self.copy_to(copy) / "landing"
        for path, text in files.items():
            (landing / path).write_text(text, encoding="utf-8")
        return cli_night(landing, copy / "warehouse.duckdb")


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _demo_night(root: Path) -> bool:
    from cost_pipeline.cli import run_pipeline
    from cost_pipeline.demo import write_demo_landing

    return run_pipeline(write_demo_landing(root / "landing"), root / "warehouse.duckdb")


@pytest.fixture(scope="session")
def demo_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """The whole nightly job on the built-in demo scenario, once per session: under xdist the first worker that needs
    it runs it, the others wait for it and read the same warehouse (tests only read it, or copy it first)."""
    if not hasattr(request.config, "workerinput"):  # no workers (-n 0): this process alone
        root = tmp_path_factory.mktemp("demo")
        return DemoRun(root / "landing", root / "warehouse.duckdb", _demo_night(root))
    shared = tmp_path_factory.getbasetemp().parent  # this session's folder, above every worker's own
    root, outcome = shared / "demo", shared / "demo.json"
    with _exclusive(shared / "demo.lock"):
        if not outcome.exists():
            outcome.write_text(json.dumps({"succeeded": _demo_night(root)}), encoding="utf-8")
    return DemoRun(root / "landing", root / "warehouse.duckdb", json.loads(outcome.read_text("utf-8"))["succeeded"])


@pytest.fixture
def demo_copy(demo_run: DemoRun, tmp_path: Path) -> Path:
    """A copy of the demo night to change: its landing folder, warehouse and the Dagster home beside it."""
    return demo_run.copy_to(tmp_path / "demo")


@pytest.fixture
def host_in_kolkata(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The host's time zone is +05:30 (TZ=Asia/Kolkata) for the test, restored afterwards: what runs must not
    depend on it."""
    import time

    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
