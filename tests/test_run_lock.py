"""A second concurrent run is refused with a clear message and writes nothing (issue 5, Faults)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cost_pipeline.contract import load_contract
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_source, sources
from cost_pipeline.run_lock import WarehouseBusy, lock_file_for, warehouse_run_lock
from tests.helpers import REGISTRY_HEADER

REGISTRY = REGISTRY_HEADER + "B-1,p,g,t,d1,m1,c1,cfg1,v1,,,,,\n"

HOLDER = """
import sys
from cost_pipeline import duckdb_session
from cost_pipeline.run_lock import warehouse_run_lock
shared = sys.argv[2:] == ["shared"]
with warehouse_run_lock(sys.argv[1], shared=shared):
    # a reader keeps the warehouse open read-only, as report, export and journal do
    con = duckdb_session.connect(sys.argv[1], read_only=True) if shared else None
    print("held", flush=True)
    sys.stdin.read()
"""


def _reset_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _hold_in_another_process(warehouse: Path, shared: bool = False) -> subprocess.Popen:
    project_root = str(Path(__file__).resolve().parents[1])
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(warehouse), *(["shared"] if shared else [])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=project_root,
        preexec_fn=_reset_signals,
        env={"PYTHONPATH": project_root, "PATH": "/usr/bin:/bin"},
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "held"
    return process


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _guarded_ingest(landing: Path, warehouse: Path) -> None:
    """What a run does, in the order the CLI will do it: take the run lock, then open and write the warehouse."""
    with warehouse_run_lock(warehouse):
        con = connect(warehouse, readable_dir=landing)
        try:
            load_source(con, landing, sources()["batch_registry"], load_contract())
        finally:
            con.close()


@pytest.fixture
def night(tmp_path: Path) -> tuple[Path, Path]:
    landing = tmp_path / "landing"
    (landing / "registry").mkdir(parents=True)
    (landing / "registry" / "batches.csv").write_text(REGISTRY, encoding="utf-8")
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    _guarded_ingest(landing, warehouse)  # last night's run, finished
    return landing, warehouse


def test_a_second_run_is_refused_with_a_clear_message_and_writes_nothing(night):
    landing, warehouse = night
    (landing / "registry" / "batches_late.csv").write_text(REGISTRY.replace("B-1", "B-2"), encoding="utf-8")
    before = {p.name: (_digest(p), p.stat().st_mtime_ns) for p in warehouse.parent.iterdir() if p.is_file()}
    holder = _hold_in_another_process(warehouse)
    try:
        with pytest.raises(WarehouseBusy) as refused:
            _guarded_ingest(landing, warehouse)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    message = str(refused.value)
    assert str(warehouse.resolve()) in message
    assert "another run" in message and f"pid {holder.pid}" in message
    assert "wrote nothing" in message
    after = {
        p.name: (_digest(p), p.stat().st_mtime_ns)
        for p in warehouse.parent.iterdir()
        if p.is_file()
        if p.name != "warehouse.duckdb.lock"
    }
    assert after == {k: v for k, v in before.items() if k != "warehouse.duckdb.lock"}
    assert not (warehouse.parent / "warehouse.duckdb.wal").exists()


def test_readers_share_the_lock_and_a_run_waits_for_none_of_them(night):
    """report, export and journal read at once (they used to take the lock exclusively, so a second reader got exit
    3, and opened the warehouse read-write, so it blocked the other's read-only open); a run is refused while one
    reads, and a reader while a run writes."""
    from cost_pipeline import duckdb_session
    from cost_pipeline.warehouse_file import check_warehouse

    landing, warehouse = night
    reader = _hold_in_another_process(warehouse, shared=True)
    try:
        with warehouse_run_lock(warehouse, shared=True):
            check_warehouse(warehouse, must_exist=True, read_only=True)
            con = duckdb_session.connect(str(warehouse), read_only=True)
            assert con.execute("select count(*) from raw.batch_registry").fetchone() == (1,)
            con.close()
        with pytest.raises(WarehouseBusy, match="a command reading it"):
            _guarded_ingest(landing, warehouse)
    finally:
        reader.kill()
        reader.wait(timeout=30)

    run = _hold_in_another_process(warehouse)
    try:
        with pytest.raises(WarehouseBusy, match=f"another run \\(pid {run.pid}\\)"):
            with warehouse_run_lock(warehouse, shared=True):
                pass
    finally:
        run.kill()
        run.wait(timeout=30)
    with pytest.raises(RuntimeError, match="held shared"):
        with warehouse_run_lock(warehouse, shared=True), warehouse_run_lock(warehouse):
            pass
    with warehouse_run_lock(warehouse), warehouse_run_lock(warehouse, shared=True):
        pass  # a run may read what it writes


def test_the_lock_is_released_when_its_holder_dies_and_the_next_run_proceeds(night):
    landing, warehouse = night
    holder = _hold_in_another_process(warehouse)
    holder.send_signal(signal.SIGKILL)  # no clean exit: the kernel drops the flock
    holder.wait(timeout=30)
    (landing / "registry" / "batches_late.csv").write_text(REGISTRY.replace("B-1", "B-2"), encoding="utf-8")
    _guarded_ingest(landing, warehouse)
    assert lock_file_for(warehouse).exists()  # the stale lock file is reused, not a problem


def test_a_second_run_in_the_same_process_but_another_thread_is_refused(tmp_path):
    warehouse = tmp_path / "w.duckdb"
    errors: list[BaseException] = []

    def other_run() -> None:
        try:
            with warehouse_run_lock(warehouse):
                pass
        except BaseException as error:  # noqa: BLE001 - handed back to the test thread
            errors.append(error)

    with warehouse_run_lock(warehouse):
        thread = threading.Thread(target=other_run)
        thread.start()
        thread.join(timeout=30)
    assert len(errors) == 1 and isinstance(errors[0], WarehouseBusy)
    assert not warehouse.exists()  # the lock never creates the warehouse


def test_the_lock_is_reentrant_within_one_thread_and_released_afterwards(tmp_path):
    warehouse = tmp_path / "w.duckdb"
    with warehouse_run_lock(warehouse) as outer, warehouse_run_lock(warehouse) as inner:
        assert outer == inner == lock_file_for(warehouse)
    holder = _hold_in_another_process(warehouse)  # released: another process can take it now
    holder.kill()
    holder.wait(timeout=30)


def test_the_cli_refuses_a_second_run_and_writes_nothing(tmp_path, capsys):
    from cost_pipeline.cli import main

    landing = tmp_path / "landing"
    (landing / "registry").mkdir(parents=True)
    (landing / "registry" / "batches.csv").write_text(REGISTRY, encoding="utf-8")
    warehouse = tmp_path / "warehouse.duckdb"
    holder = _hold_in_another_process(warehouse)
    try:
        code = main(["run", "--landing", str(landing), "--warehouse", str(warehouse)])
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert code == 3
    assert "is busy: another run" in capsys.readouterr().err
    assert not warehouse.exists()


def _unwritable_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "read_only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder / "warehouse.duckdb"


def _under_a_file(tmp_path: Path) -> Path:
    (tmp_path / "a_file").write_text("not a folder", encoding="utf-8")
    return tmp_path / "a_file" / "warehouse.duckdb"


@pytest.mark.parametrize(
    "place",
    [
        # As root chmod does not stop a write: a regular file where the folder should be stops root too.
        pytest.param(
            _unwritable_folder,
            marks=pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a 0555 folder"),
        ),
        _under_a_file,
    ],
)
def test_a_run_lock_that_cannot_be_created_is_one_line_and_exit_code_5(tmp_path, capsys, place):
    from cost_pipeline.cli import main

    landing = tmp_path / "landing"
    (landing / "registry").mkdir(parents=True)
    (landing / "registry" / "batches.csv").write_text(REGISTRY, encoding="utf-8")
    warehouse = place(tmp_path)
    try:
        code = main(["run", "--landing", str(landing), "--warehouse", str(warehouse)])
    finally:
        if warehouse.parent.is_dir():
            warehouse.parent.chmod(0o755)  # so that pytest can remove tmp_path
    err = capsys.readouterr().err
    assert code == 5
    assert err.splitlines() == [err.strip()] and "Traceback" not in err
    assert f"its run lock {lock_file_for(warehouse)} cannot be created" in err
    assert not warehouse.exists()


def test_a_run_launched_through_dagster_takes_the_lock_too(tmp_path):
    """The webserver and the schedule launch runs without the CLI: the warehouse resource takes the lock itself."""
    import dagster as dg

    from cost_pipeline.defs.ingest import source_assets
    from cost_pipeline.defs.resources import LandingZone, Warehouse

    landing = tmp_path / "landing"
    (landing / "registry").mkdir(parents=True)
    (landing / "registry" / "batches.csv").write_text(REGISTRY, encoding="utf-8")
    warehouse = tmp_path / "w.duckdb"
    registry = next(a for a in source_assets if a.key == dg.AssetKey(["raw", "batch_registry"]))
    resources = {"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))}
    holder = _hold_in_another_process(warehouse)
    try:
        with pytest.raises(dg.DagsterResourceFunctionError) as refused:
            dg.materialize([registry], resources=resources, instance=dg.DagsterInstance.ephemeral())
        assert isinstance(refused.value.__cause__, WarehouseBusy)
        assert "is busy" in str(refused.value.__cause__)
        assert not warehouse.exists()  # refused before it wrote anything
    finally:
        holder.communicate("")
    assert dg.materialize([registry], resources=resources, instance=dg.DagsterInstance.ephemeral()).success
    assert warehouse.exists()
