"""A run's first dbt command runs in the process the run started ahead of it, dbt already imported
(``cost_pipeline.dbt_warm``; issue 15, the night's fixed cost): the same lines and exit code as dbt run in the
command's own process; with no process waiting, the command runs dbt itself; SIGINT and SIGTERM reach dbt; a command
killed with -9 interrupts its dbt; a waiting process ends with the run's process; the dbt resource hands each of a
run's commands over (the first to the process started ahead, each later one to one forked for it by the process's one
fork server) and ends a process no command took."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import dagster as dg
import pytest

from cost_pipeline import dbt_warm
from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, seed_partial_parse, warehouse_folder_dbt_executable
from cost_pipeline.dbt_warm import (
    ENDED_WAITING,
    WARM_VARIABLE,
    ForkServer,
    WarmDbt,
    fork_server,
    resolved_schemas,
    warm_up,
)
from cost_pipeline.defs.dbt import DBT_GLOBAL_FLAGS, NIGHTLY_BUILD, ProjectDbtCli


@pytest.fixture
def warm() -> WarmDbt:
    waiting = WarmDbt()
    yield waiting
    waiting.close()


def _environment(warehouse: Path, target: Path, **more: str) -> dict[str, str]:
    seed_partial_parse(target, warehouse)  # as the night does: no whole parse
    return {
        **os.environ,
        "COST_WAREHOUSE": str(warehouse),
        "DBT_PROFILES_DIR": str(DBT_PROJECT_DIR),
        "DBT_TARGET_PATH": str(target),
        "DBT_LOG_FORMAT": "json",
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        **more,
    }


def _dbt(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [warehouse_folder_dbt_executable(), *args], cwd=DBT_PROJECT_DIR, env=env, capture_output=True, text=True
    )


def _events(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def _names(output: str) -> list[str]:
    """The events dbt wrote, by name, in order."""
    return [event["info"]["name"] for event in _events(output)]


def _listed(output: str) -> list[str]:
    """The lines dbt ls printed, without what changes between two processes (pid, time, invocation)."""
    return [event["info"]["msg"] for event in _events(output) if event["info"]["name"] == "PrintEvent"]


def test_a_command_handed_over_prints_the_same_lines_and_exits_the_same(demo_copy: Path, warm: WarmDbt, tmp_path):
    warehouse = demo_copy / "warehouse.duckdb"
    listing = ["ls", "--resource-type", "model"]
    own = _dbt(listing, _environment(warehouse, tmp_path / "own"))
    handed = _dbt(listing, _environment(warehouse, tmp_path / "handed", **{WARM_VARIABLE: warm.address}))
    assert (handed.returncode, own.returncode) == (0, 0), handed.stdout + handed.stderr
    assert _listed(handed.stdout) == _listed(own.stdout) and len(_listed(own.stdout)) > 50
    assert _names(handed.stdout) == _names(own.stdout)
    assert {event["info"]["pid"] for event in _events(handed.stdout)} == {warm.process.pid}
    assert warm.process.wait(timeout=60) == 0  # it served its one command and ended
    # A command that fails: the same error and exit code (2, a usage error), now with no process waiting.
    bad = ["ls", "--project-dir", str(tmp_path / "no-project")]
    own = _dbt(bad, _environment(warehouse, tmp_path / "own"))
    after = _dbt(bad, _environment(warehouse, tmp_path / "after", **{WARM_VARIABLE: warm.address}))
    assert (after.returncode, after.stdout, after.stderr) == (own.returncode, own.stdout, own.stderr)
    assert own.returncode == 2 and "Error" in own.stderr


def _build_started(warehouse: Path, target: Path, warm: WarmDbt) -> subprocess.Popen:
    """``cost-pipeline-dbt build`` handed over to ``warm``, once dbt has started its first node."""
    command = subprocess.Popen(
        [warehouse_folder_dbt_executable(), *NIGHTLY_BUILD],
        cwd=DBT_PROJECT_DIR,
        env=_environment(warehouse, target, **{WARM_VARIABLE: warm.address}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    for line in command.stdout:
        if line.startswith("{") and json.loads(line)["info"]["name"] == "LogStartLine":
            return command
    raise AssertionError(f"dbt started no node: exit {command.wait()}")


def test_sigterm_and_sigint_reach_dbt(demo_copy: Path, warm: WarmDbt, tmp_path: Path):
    command = _build_started(demo_copy / "warehouse.duckdb", tmp_path / "t", warm)
    command.send_signal(signal.SIGINT)  # as dagster-dbt stops a dbt process
    names = [event["info"]["name"] for event in _events(command.stdout.read())]
    assert command.wait() == 2 and "MainEncounteredError" in names  # dbt's own answer to an interrupt
    assert warm.process.wait(timeout=60) == 0

    second = WarmDbt()
    try:
        command = _build_started(demo_copy / "warehouse.duckdb", tmp_path / "u", second)
        command.send_signal(signal.SIGTERM)
        command.stdout.read()
        assert (command.wait(), second.process.wait(timeout=60)) == (-signal.SIGTERM, -signal.SIGTERM)
    finally:
        second.close()


def test_a_command_killed_interrupts_its_dbt(demo_copy: Path, warm: WarmDbt, tmp_path: Path):
    command = _build_started(demo_copy / "warehouse.duckdb", tmp_path / "t", warm)
    command.kill()
    # dbt still writes into the pipe: read it to its end, which comes when the waiting process ends
    events = _events(command.stdout.read())
    summary = [event["data"] for event in events if event["info"]["name"] == "EndOfRunSummary"]
    assert summary == [{**summary[0], "keyboard_interrupt": True}]
    assert "LogCancelLine" in {event["info"]["name"] for event in events}
    assert warm.process.wait(timeout=60) == 0


# A run's process that starts a waiting process and ends without a dbt command or a teardown.
RUN_THAT_DIES = "from cost_pipeline.dbt_warm import WarmDbt; w = WarmDbt(); print(w.process.pid, w.address)"


def test_a_waiting_process_ends_with_the_run_s_process_and_removes_its_socket():
    started = subprocess.run(
        [
            sys.executable,
            "-c",
            "from cost_pipeline.dbt_warm import WarmDbt; w = WarmDbt(); print(w.process.pid, w.address)",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    pid, address = started.stdout.split()
    status = Path(f"/proc/{pid}/status")
    for _ in range(600):  # the parent-death signal comes once the kernel has torn the run's process down
        try:
            if "zombie" in status.read_text() or "State:\tX" in status.read_text():
                break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the waiting process outlived the run's process")
    assert not Path(address).parent.exists()  # it removed its socket's folder on the way out


def test_the_dbt_resource_hands_each_command_over_and_ends_an_unused_process(demo_copy: Path, monkeypatch):
    """The run's first command runs in the process started ahead, each later one (a night's second build) in one
    forked for it by the same fork server, warm too; the teardown ends a process no command took."""
    monkeypatch.setenv("COST_WAREHOUSE", str(demo_copy / "warehouse.duckdb"))
    resource = ProjectDbtCli(
        project_dir=str(DBT_PROJECT_DIR),
        dbt_executable=warehouse_folder_dbt_executable(),
        global_config_flags=DBT_GLOBAL_FLAGS,
    )
    with dg.build_resources({"dbt": resource}) as resources:
        ahead = resources.dbt._warm[0]
        pids = []
        for _ in range(2):
            target = demo_copy / f"target-{len(pids)}"
            seed_partial_parse(target, demo_copy / "warehouse.duckdb")
            invocation = resources.dbt.cli(["ls", "--resource-type", "seed"], target_path=target)
            pids.append(({event.raw_event["info"]["pid"] for event in invocation.stream_raw_events()}, invocation))
        warm = resources.dbt._warm
        (first, first_invocation), (second, second_invocation) = pids
        assert [waiting.taken for waiting in warm] == [True, True] and warm[0] is ahead
        assert first == {warm[0].process.pid} != {first_invocation.process.pid}
        assert second == {warm[1].process.pid} != {second_invocation.process.pid}
        server = fork_server().process.pid
        assert WARM_VARIABLE not in os.environ
    assert [waiting.process.returncode for waiting in warm] == [0, 0]

    with dg.build_resources({"dbt": resource}) as resources:
        (unused,) = resources.dbt._warm
    # ended by the teardown's SIGTERM as it waited
    assert unused.process.returncode == ENDED_WAITING and not Path(unused.address).parent.exists()
    assert fork_server().process.pid == server  # one per process: dbt imported once for every run it starts


def test_waiting_processes_are_forked_by_the_process_s_one_fork_server():
    """dbt is imported once a process: each waiting process is a child of its fork server, which runs no thread."""
    first, second = WarmDbt(), WarmDbt()
    try:
        server = fork_server().process.pid
        assert _parent(first.process.pid) == _parent(second.process.pid) == server
        assert Path(f"/proc/{server}/status").read_text().count("\nThreads:\t1\n") == 1
    finally:
        first.close()
        second.close()
    assert (first.process.returncode, second.process.returncode) == (ENDED_WAITING, ENDED_WAITING)


def test_a_waiting_process_ended_as_soon_as_it_is_forked_ends():
    """SIGTERM sent as the fork server's fork returns (a run whose steps end at once) ends the process every time:
    Python forgets a signal that comes before a forked interpreter is set up, unless the fork held it."""
    forked = [WarmDbt() for _ in range(100)]
    for waiting in forked:
        waiting.close()
    assert {waiting.process.returncode for waiting in forked} == {ENDED_WAITING}


def test_a_fork_server_that_ends_before_it_forks_leaves_nothing_to_end(monkeypatch: pytest.MonkeyPatch):
    """Killed while it imports dbt, the fork server forks no waiting process: the run's teardown has nothing to end
    and says nothing, and the socket is gone, so a command would run dbt itself."""
    server = ForkServer()
    monkeypatch.setattr(dbt_warm, "fork_server", lambda: server)
    waiting = WarmDbt()
    server.process.kill()  # long before dbt is imported
    server.process.wait()
    with pytest.raises(ChildProcessError):
        _ = waiting.process.pid
    waiting.close()
    assert not Path(waiting.address).parent.exists()


def _parent(pid: int) -> int:
    """The parent of process ``pid`` (Linux's /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))


def test_the_schemas_to_build_ahead_resolve_and_are_kept_once_built():
    """Each class named resolves in the installed dbt (a rename would build nothing ahead) and keeps its schema."""
    warm_up()
    for schema_class in resolved_schemas():
        before = schema_class.json_schema.__func__.cache_info().hits
        schema_class.json_schema()
        assert schema_class.json_schema.__func__.cache_info().hits == before + 1, schema_class


def test_a_process_that_dies_before_taking_the_command_leaves_it_to_dbt_itself(demo_copy: Path, tmp_path: Path):
    """A waiting process that accepts the command and ends before it answers (out of memory, say): the command runs
    dbt itself, once."""
    address = str(tmp_path / "dying.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(1)

    def accept_and_die() -> None:
        connection, _ = listener.accept()
        connection.recv(1)
        connection.close()

    dying = threading.Thread(target=accept_and_die)
    dying.start()
    warehouse = demo_copy / "warehouse.duckdb"
    listing = ["ls", "--resource-type", "model"]
    own = _dbt(listing, _environment(warehouse, tmp_path / "own"))
    handed = _dbt(listing, _environment(warehouse, tmp_path / "handed", **{WARM_VARIABLE: address}))
    dying.join(timeout=60)
    listener.close()
    assert (handed.returncode, _listed(handed.stdout)) == (own.returncode, _listed(own.stdout))
    assert handed.returncode == 0 and len(_listed(own.stdout)) > 50
