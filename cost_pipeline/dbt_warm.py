"""dbt started ahead of its step: a run's first dbt command finds dbt imported (``cost-pipeline-dbt``).

Each dbt command of a night is a process of its own (``cost-pipeline-dbt``, which dagster-dbt starts and reads), and
about 1.3 s of it on a quiet machine (2 s on a slow one) is Python importing dbt and its adapter before the first node
runs, on the night's critical path: the steps before dbt's use one of the machine's cores. A run whose steps use the
dbt resource starts one process when its resources are set up (``WarmDbt``, from ``ProjectDbtCli``): it imports dbt,
builds the JSON schemas dbt validates its project and profile with (``warm_up``), and waits on a Unix socket while
the ingest steps run. The run's first dbt command (``cost-pipeline-dbt``, with
``COST_DBT_WARM`` naming the socket) hands its command over (``hand_over``): it passes its standard input, output and
error (SCM_RIGHTS), its arguments, environment and working folder, then waits and exits with the waiting process's
exit code, forwarding SIGINT and SIGTERM to it. dbt runs there exactly as it would have in the command's own process
(``dbt_in_warehouse_folder.main``), writing to the same pipe: dagster-dbt reads the same lines and exit code.

The waiting process serves one command. If it is gone (or never started), the command runs dbt itself, as before. If
the command's process dies (kill -9), the waiting process interrupts its dbt as dagster-dbt would (SIGINT); if the
run's process dies before the handover, the waiting process ends too (Linux). The run's resource teardown ends a
process no command took.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

WARM_VARIABLE = "COST_DBT_WARM"
_LENGTH = struct.Struct("!I")  # the request's length
_NUMBER = struct.Struct("!i")  # the waiting process's pid, then dbt's exit code

# What `cost-pipeline-dbt build` imports before its first node: dbt's command line, its build task, the manifest's
# parser and compiler, the DuckDB adapter.
WARM_IMPORTS = (
    "dbt.cli.main",
    "dbt.task.build",
    "dbt.parser.manifest",
    "dbt.compilation",
    "dbt.context.providers",
    "dbt.adapters.duckdb.impl",
)
# The classes whose JSON schema a build builds to validate its project, profile, selectors and results: each is built
# once a process (cached), about 0.4 s of dbt's main thread before its first node.
WARM_SCHEMAS = (
    "dbt.contracts.project:Project",
    "dbt.contracts.project:Configuration",
    "dbt.contracts.project:ProjectFlags",
    "dbt.contracts.project:PackageConfig",
    "dbt.contracts.project:ProfileConfig",
    "dbt.contracts.selection:SelectorFile",
    "dbt.adapters.duckdb.credentials:DuckDBCredentials",
    "dbt_common.contracts.constraints:ColumnLevelConstraint",
    "dbt.artifacts.resources.v1.config:Hook",
    "dbt.task.test:TestResultData",
)


def warm_up() -> None:
    """Import dbt and build the JSON schemas its build validates with, as ``cost-pipeline-dbt build`` would."""
    for module in WARM_IMPORTS:
        importlib.import_module(module)
    for name in WARM_SCHEMAS:
        module, _, qualname = name.partition(":")
        getattr(importlib.import_module(module), qualname).json_schema()


class WarmDbt:
    """One process that imports dbt and waits for a dbt command (``serve``); ``close`` ends it if none came."""

    def __init__(self) -> None:
        self.taken = False
        self._folder = tempfile.mkdtemp(prefix="cost-dbt-")
        self.address = os.path.join(self._folder, "dbt.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self.address)
            listener.listen(1)
            # The socket listens before the process starts: a command that comes before dbt is imported waits for it.
            self.process = subprocess.Popen(
                [sys.executable, "-m", __name__, str(listener.fileno()), str(os.getpid())],
                pass_fds=[listener.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},  # as dagster-dbt starts dbt
            )
        finally:
            listener.close()  # the waiting process holds it alone: once it is gone, a command runs dbt itself

    def take(self) -> str | None:
        """The waiting process's address, for the first command that asks; None after."""
        if self.taken:
            return None
        self.taken = True
        return self.address

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait()
        Path(self.address).unlink(missing_ok=True)
        os.rmdir(self._folder)


def hand_over(address: str) -> int | None:
    """Run this process's dbt command in the process waiting at ``address``: its exit code, or None when no process
    took the command (nothing ran; run dbt here)."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(address)
        request = json.dumps({"argv": sys.argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
        socket.send_fds(connection, [b"\0"], [0, 1, 2])
        connection.sendall(_LENGTH.pack(len(request)) + request)
        pid = _read_number(connection)
    except OSError:
        pid = None
    if pid is None:
        connection.close()
        return None

    forwarded: list[int] = []

    def forward(number: int, _frame) -> None:
        forwarded.append(number)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, number)

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, forward)
    code = _read_number(connection)
    if code is None and forwarded:  # the signal ended dbt's process: it ends this one too, as it would have
        signal.signal(forwarded[-1], signal.SIG_DFL)
        os.kill(os.getpid(), forwarded[-1])
    if code is None:
        print(f"cost-pipeline-dbt: dbt's process {pid} ended without an exit code", file=sys.stderr)
        return 1
    return code


def serve(listener: socket.socket, parent: int) -> None:
    """Warm up, then run the one dbt command handed over at ``listener`` as this process's own; end with it."""
    ending = _end_with(parent)
    warm_up()
    connection, _ = listener.accept()
    listener.close()
    _, fds, _, _ = socket.recv_fds(connection, 1, 3)
    (length,) = _LENGTH.unpack(_read_exactly(connection, _LENGTH.size))
    request = json.loads(_read_exactly(connection, length))
    for fd, standard in zip(fds, (0, 1, 2), strict=True):
        os.dup2(fd, standard)
        os.close(fd)
    ending.cancel()  # from here on this process lives as long as the command's
    connection.sendall(_NUMBER.pack(os.getpid()))
    finished = threading.Event()
    threading.Thread(target=_interrupt_when_gone, args=(connection, finished), daemon=True).start()
    code = _run(request)
    finished.set()
    sys.stdout.flush()
    sys.stderr.flush()
    with contextlib.suppress(OSError):  # the command's process is gone: dbt was interrupted, nobody waits
        connection.sendall(_NUMBER.pack(code))


def _run(request: dict) -> int:
    """The command's exit code, dbt run in this process as ``cost-pipeline-dbt`` would have run it."""
    from cost_pipeline.dbt_in_warehouse_folder import main

    sys.argv = request["argv"]
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    try:
        main()
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException:  # noqa: BLE001 - as Python ends on an uncaught exception: its traceback, exit 1
        traceback.print_exc()
        return 1
    return 0


def _interrupt_when_gone(connection: socket.socket, finished: threading.Event) -> None:
    """The command's process died before dbt ended (nothing more can come on the connection): interrupt dbt, as
    dagster-dbt does when it stops a dbt process."""
    with contextlib.suppress(OSError):
        connection.recv(1)
    if not finished.is_set():
        os.kill(os.getpid(), signal.SIGINT)


class _Ending:
    """Until cancelled, this process ends when the run's process does (Linux's parent-death signal)."""

    def __init__(self, prctl) -> None:
        self._prctl = prctl

    def cancel(self) -> None:
        if self._prctl is not None:
            self._prctl(_PR_SET_PDEATHSIG, 0)


_PR_SET_PDEATHSIG = 1


def _end_with(parent: int) -> _Ending:
    prctl = None
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the run's process ended before the signal was armed
        sys.exit(0)
    return _Ending(prctl)


def _read_exactly(connection: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the connection closed early")
        data += chunk
    return data


def _read_number(connection: socket.socket) -> int | None:
    """The next number on ``connection``; None when it closed first."""
    try:
        return _NUMBER.unpack(_read_exactly(connection, _NUMBER.size))[0]
    except (ConnectionError, OSError):
        return None


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])), parent=int(sys.argv[2]))
