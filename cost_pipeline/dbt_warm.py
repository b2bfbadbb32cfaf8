"""dbt started ahead of its step: a run's dbt commands find dbt imported (``cost-pipeline-dbt``).

Each dbt command of a night is a process of its own (``cost-pipeline-dbt``, which dagster-dbt starts and reads). Before
its first node it spent about 1.3 s importing dbt and its adapter and 0.4 s building the JSON schemas dbt validates its
project, profile and results with (quiet machine; docs/benchmarks.md), on the night's critical path, while the steps
before it (the ingest, one Python thread) left the machine's other core mostly idle. A run whose steps use the dbt
resource starts, when its resources are set up, a fork server (``ForkServer``, one per process, kept for its life): it
does both (``warm_up``) once, then forks a process for each ``WarmDbt``, which waits on a Unix socket while the ingest
steps run. A dbt command (``cost-pipeline-dbt`` with ``COST_DBT_WARM`` naming the socket) hands its command over
(``hand_over``): it passes its standard input, output and error (SCM_RIGHTS), its arguments, environment and working
folder, then waits and exits with the waiting process's exit code, forwarding SIGINT and SIGTERM to it. dbt runs there
as it would have in the command's own process (``dbt_in_warehouse_folder.main``), writing to the same pipe: dagster-dbt
reads the same lines (their ``pid`` is the waiting process's) and the same exit code. The run's first command takes the
process started ahead; each later one (a night's second build, the queries that explain failed tests) one forked for
it then, warm too; a process that runs many nights (a test session, a code server) imports dbt once.

A waiting process serves one command. If it is gone (or never started), the command runs dbt itself, as before. If
the command's process dies (kill -9), the waiting process interrupts its dbt as dagster-dbt would (SIGINT). Until the
handover, it ends when the fork server does, which ends when the process that started it does (Linux's parent-death
signal, and its control socket closing); after it, it lives as long as its dbt, as a dbt process of its own would. The
run's resource teardown ends it if it still runs: no command came, or the step stopped while its dbt ran (which would
otherwise keep the warehouse's lock). The fork server forks only what ``warm_up`` imported, built and compiled (the
prepared project's macros and SQL): it runs no thread and opens no database.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
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

from cost_pipeline.dbt_templates import compile_ahead

WARM_VARIABLE = "COST_DBT_WARM"
ENDED_WAITING = 128 + signal.SIGTERM  # the exit status of a waiting process that no command took
# Unix sockets that carry file descriptors (Linux, macOS): elsewhere every dbt command starts dbt itself.
SUPPORTED = hasattr(socket, "AF_UNIX") and hasattr(socket, "send_fds")
_SOCKET = "dbt.sock"  # in a folder of its own (tempfile.mkdtemp)
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


def resolved_schemas() -> list[type]:
    """The classes of ``WARM_SCHEMAS``, imported."""
    classes = []
    for name in WARM_SCHEMAS:
        module, _, qualname = name.partition(":")
        classes.append(getattr(importlib.import_module(module), qualname))
    return classes


def warm_up(partial_parse: Path | None = None) -> None:
    """Import dbt and build the JSON schemas its build validates with, as ``cost-pipeline-dbt build`` would, and
    compile the prepared parse ``partial_parse``'s macros and SQL (``dbt_templates.compile_ahead``)."""
    for module in WARM_IMPORTS:
        importlib.import_module(module)
    for schema_class in resolved_schemas():
        schema_class.json_schema()
    if partial_parse is not None:
        compile_ahead(partial_parse)


class WarmDbt:
    """One process, forked by this process's ``ForkServer``, that waits for a dbt command (``serve``); ``close`` ends
    it if it still runs."""

    def __init__(self) -> None:
        self.taken = False
        self._folder = tempfile.mkdtemp(prefix="cost-dbt-")
        self.address = os.path.join(self._folder, _SOCKET)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self.address)
            listener.listen(1)
            # The socket listens before the process is forked: a command that comes first waits for it.
            self.process = fork_server().fork(listener)
        except BaseException:
            _remove(self._folder)
            raise
        finally:
            listener.close()  # the waiting process holds it alone: once it is gone, a command runs dbt itself

    def take(self) -> str | None:
        """The waiting process's address, for the first command that asks; None after."""
        if self.taken:
            return None
        self.taken = True
        return self.address

    def close(self) -> None:
        """End the process: one no command took, or one whose dbt still runs when its run ends (a step that raised
        while dbt ran), which would otherwise keep the warehouse's lock. None to end if the fork server ended before
        it forked one."""
        try:
            if self.process.poll() is None:
                self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=60)
        except ChildProcessError:
            pass
        _remove(self._folder)


class Forked:
    """A waiting process the fork server forked, as ``subprocess.Popen`` shows a child: ``pid``, ``returncode``,
    ``poll``, ``wait``, ``terminate``, ``kill``. The fork server, its parent, writes its pid and then its exit status
    (``os.waitstatus_to_exitcode``: minus the signal that ended it) on ``status``."""

    def __init__(self, status: socket.socket) -> None:
        self._status = status
        self._pid: int | None = None
        self.returncode: int | None = None

    @property
    def pid(self) -> int:
        """Known once the fork server, warm, forked it: until then, waits for it."""
        if self._pid is None:
            self._status.settimeout(None)
            self._pid = _read_number(self._status)
            if self._pid is None:
                raise ChildProcessError("the fork server ended before it forked the waiting process")
        return self._pid

    def poll(self) -> int | None:
        return self._wait(0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._wait(timeout)
        if code is None:
            raise subprocess.TimeoutExpired("cost_pipeline.dbt_warm", timeout or 0)
        return code

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, number: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, number)

    def _wait(self, timeout: float | None) -> int | None:
        if self.returncode is not None:
            return self.returncode
        pid = self.pid
        self._status.settimeout(timeout)  # 0: a look, without waiting
        try:
            code = _NUMBER.unpack(_read_exactly(self._status, _NUMBER.size))[0]
        except (TimeoutError, BlockingIOError):
            return None  # still running
        except OSError:  # the fork server ended first (its own parent did): the process is init's now
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                code = -signal.SIGTERM  # what its parent-death signal did to it, had it not been handed a command
            else:
                return None
        finally:
            self._status.settimeout(None)
        self.returncode = code
        self._status.close()
        return code


class ForkServer:
    """One process per process that starts waiting processes: it imports dbt, builds its schemas and compiles the
    prepared project's macros and SQL once (``warm_up``), then forks a waiting process for each ``WarmDbt``, warm from
    the start. Before it, each waiting process was a new interpreter that did all this again (about 2.5 s of CPU a dbt
    command; a night's second build and a process that runs many nights paid them every time). It ends with the process
    that started it (parent-death signal, and its control socket closing); its waiting processes, until handed a
    command, end with it."""

    def __init__(self) -> None:
        from cost_pipeline.dbt_setup import PARTIAL_PARSE_FILE, manifest_path  # the project's prepared parse

        self.owner = os.getpid()
        self._lock = threading.Lock()
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # -P: the run's folder is not on its import path, as it is not on cost-pipeline-dbt's. Its standard
            # error goes nowhere: each waiting process's is the command's once handed over.
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-P", "-m", __name__, str(theirs.fileno()), str(os.getpid())),
                    str(manifest_path().with_name(PARTIAL_PARSE_FILE)),
                ],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},  # as dagster-dbt starts dbt
            )
        except BaseException:
            self._control.close()
            raise
        finally:
            theirs.close()

    def fork(self, listener: socket.socket) -> Forked:
        """A waiting process that accepts its command at ``listener``."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self._lock:
                socket.send_fds(self._control, [b"\0"], [listener.fileno(), theirs.fileno()])
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return Forked(ours)


_server: ForkServer | None = None
_server_lock = threading.Lock()


def fork_server() -> ForkServer:
    """This process's fork server, started when first asked for, or again if it ended (or this process is a fork
    of the one that started it)."""
    global _server
    with _server_lock:
        if _server is None or _server.owner != os.getpid() or _server.process.poll() is not None:
            _server = ForkServer()
        return _server


def hand_over(address: str) -> int | None:
    """Run this process's dbt command in the process waiting at ``address``: its exit code, or None when no process
    took the command (nothing ran; run dbt here). SIGINT and SIGTERM are forwarded to it, once it has a command."""
    pid: int | None = None
    received: list[int] = []

    def forward(number: int, _frame) -> None:
        received.append(number)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, number)

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, forward)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        try:
            connection.connect(address)
            request = json.dumps({"argv": sys.argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
            socket.send_fds(connection, [b"\0"], [0, 1, 2])
            connection.sendall(_LENGTH.pack(len(request)) + request)
        except OSError:
            pass
        pid = _read_number(connection)
        if pid is None and received:  # no process took the command: it was stopped before dbt ran
            _end_by(received[-1])
        if pid is None:
            return None
        for number in received:  # a signal that came while the command was handed over
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, number)
        code = _read_number(connection)
    if code is None and received:  # the signal ended dbt's process: it ends this one too, as it would have
        _end_by(received[-1])
    if code is None:
        print(f"cost-pipeline-dbt: dbt's process {pid} ended without an exit code", file=sys.stderr)
        return 1
    return code


def serve(listener: socket.socket, parent: int) -> None:
    """Run the one dbt command handed over at ``listener`` as this process's own (forked warm by the fork server,
    ``parent``); end with it."""
    folder = os.path.dirname(listener.getsockname())

    def ended(*_) -> None:
        """SIGTERM while it waits (the run ended without a dbt command, or the run's process died): remove the socket
        and exit at once, with the exit status a shell gives a process ended by SIGTERM. It ran nothing: there is
        nothing to write out, and dbt's imports need not be torn down."""
        _remove(folder)
        os._exit(ENDED_WAITING)

    signal.signal(signal.SIGTERM, ended)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # held over the fork (serve_forks)
    try:
        _parent_death_signal(signal.SIGTERM)
        if os.getppid() != parent:  # the fork server ended before the signal was armed
            ended()
        connection, _ = listener.accept()
    finally:
        listener.close()
        _remove(folder)
    _, fds, _, _ = socket.recv_fds(connection, 1, 3)
    (length,) = _LENGTH.unpack(_read_exactly(connection, _LENGTH.size))
    request = json.loads(_read_exactly(connection, length))
    for fd, standard in zip(fds, (0, 1, 2), strict=True):
        os.dup2(fd, standard)
        os.close(fd)
    # From here on this process lives as long as the command's, and ends as dbt would on a signal.
    _parent_death_signal(0)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
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

    try:
        sys.argv = request["argv"]
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        time.tzset()
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


def _parent_death_signal(number: int) -> None:
    """Linux: ``number`` reaches this process when the process that started it ends (0: none)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, number)  # PR_SET_PDEATHSIG


def _end_by(number: int) -> None:
    """End this process by signal ``number``, as its default action does."""
    signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)


def _remove(folder: str) -> None:
    """The socket's folder and the socket in it, if still there."""
    Path(folder, _SOCKET).unlink(missing_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(folder)


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
    except OSError:
        return None


def serve_forks(control: socket.socket, parent: int, partial_parse: Path | None = None) -> None:
    """The fork server (``ForkServer``): warm up (compiling the prepared parse ``partial_parse``), then fork
    a waiting process (``serve``) for each listener sent on ``control``, and write each one's pid, then its exit
    status, on the socket sent with it. It ends when ``control`` closes or ``parent`` ends; in a forked process, this
    returns once ``serve`` has."""
    signal.signal(signal.SIGTERM, lambda *_: os._exit(ENDED_WAITING))  # it holds nothing to write out
    _parent_death_signal(signal.SIGTERM)
    if os.getppid() != parent:  # the process that started it ended before the signal was armed
        return
    warm_up(partial_parse)
    # Each ended process wakes the loop (SIGCHLD through a pipe) to write its exit status.
    woken, wake = os.pipe()
    os.set_blocking(woken, False)
    os.set_blocking(wake, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake)
    statuses: dict[int, socket.socket] = {}
    while True:
        readable, _, _ = select.select([control, woken], [], [])
        if woken in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(woken, 4096)
            _report_ended(statuses)
        if control not in readable:
            continue
        _, fds, _, _ = socket.recv_fds(control, 1, 2)
        if len(fds) != 2:  # the control socket closed: the process that started it ended
            for fd in fds:
                os.close(fd)
            return
        listener, status = fds
        server = os.getpid()
        # SIGTERM is held over the fork: Python forgets a signal that reaches a forked process before its interpreter
        # has been set up again (a waiting process ended as soon as it was forked would wait on).
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        pid = os.fork()
        if pid == 0:  # the waiting process: nothing of the server's but what warm_up imported and built
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (woken, wake, status):
                os.close(fd)
            control.close()
            for other in statuses.values():
                other.close()
            serve(socket.socket(fileno=listener), parent=server)
            return
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        os.close(listener)
        reply = socket.socket(fileno=status)
        with contextlib.suppress(OSError):  # its WarmDbt is gone: the process still ends with this server
            reply.sendall(_NUMBER.pack(pid))
        statuses[pid] = reply


def _report_ended(statuses: dict[int, socket.socket]) -> None:
    """Reap every ended waiting process and write its exit status (``os.waitstatus_to_exitcode``) on its socket."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        reply = statuses.pop(pid, None)
        if reply is not None:
            with contextlib.suppress(OSError):
                reply.sendall(_NUMBER.pack(os.waitstatus_to_exitcode(status)))
            reply.close()


if __name__ == "__main__":
    serve_forks(socket.socket(fileno=int(sys.argv[1])), parent=int(sys.argv[2]), partial_parse=Path(sys.argv[3]))
