"""One nightly run at a time per warehouse: an exclusive ``flock`` on ``<warehouse>.lock``, held for the run.

Commands that only read the warehouse (``report``, ``export``, ``journal`` without ``--close``) take the same lock
shared: any number of them read at once, and a run that starts meanwhile is refused (DuckDB would not let it open
the file for writing while they have it open), as a reader is refused while a run holds it.

DuckDB already lets only one process write a file at a time, but only while a connection is open; a run
opens and closes one per step, so two runs could interleave their steps. The run lock closes that gap:
a second run that finds the lock held is refused at once, before it writes anything.

The lock belongs to the open lock file, so the operating system releases it when the holder exits, even
after ``kill -9``; a stale ``.lock`` file left behind is harmless and is reused. Within one thread the lock
is re-entrant (the CLI may hold it around a demo run while ``run_pipeline`` takes it again); another thread
or process is refused. ``flock`` is advisory and local: it does not protect a warehouse on a network file
system shared between hosts.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cost_pipeline.warehouse_file import WarehouseUnusable

_held: dict[tuple[Path, int], list] = {}  # (lock file, thread id) -> [nesting depth, held shared]
_held_guard = threading.Lock()


class WarehouseBusy(RuntimeError):
    """Another run holds the warehouse's run lock; this run was refused before it wrote anything."""

    def __init__(self, warehouse: Path, lock_file: Path, holder: str | None) -> None:
        # Only a run writes its pid into the lock file; readers hold it shared and write nothing.
        who = f"another run (pid {holder})" if holder else "a command reading it (report, export or journal)"
        super().__init__(
            f"warehouse {warehouse} is busy: {who} holds its run lock {lock_file}. "
            "This command was refused and wrote nothing; wait for the other one to finish, then run again."
        )
        self.warehouse = warehouse
        self.lock_file = lock_file


def lock_file_for(warehouse_path: str | Path) -> Path:
    warehouse = Path(warehouse_path).resolve()
    return warehouse.with_name(warehouse.name + ".lock")


def _holder(fd: int) -> str | None:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", errors="replace").strip()
    except OSError:
        return None
    return text if text.isdigit() else None


@contextmanager
def warehouse_run_lock(warehouse_path: str | Path, shared: bool = False) -> Iterator[Path]:
    """Hold the run lock of ``warehouse_path`` for the ``with`` block - ``shared`` for a command that only reads;
    raise ``WarehouseBusy`` if another holder excludes it, ``WarehouseUnusable`` (one line, exit code 5 in the CLI)
    if the lock file cannot be created.

    Yields the lock file's path. The warehouse file itself is never opened or created here.
    """
    warehouse = Path(warehouse_path).resolve()
    lock_file = lock_file_for(warehouse)
    key = (lock_file, threading.get_ident())
    with _held_guard:
        held = _held.get(key)
        if held is not None:
            if held[1] and not shared:
                raise RuntimeError(f"{lock_file} is held shared by this thread: it cannot be taken to write")
            held[0] += 1
    if held is not None:
        try:
            yield lock_file
        finally:
            with _held_guard:
                held[0] -= 1
        return

    try:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as error:  # an unwritable folder, or a file where a folder of the path should be
        why = (
            f"{error.filename} is a file where a folder of its path should be"
            if isinstance(error, FileExistsError | NotADirectoryError)
            else error.strerror or str(error)
        )
        raise WarehouseUnusable(
            f"warehouse {warehouse} cannot be used: its run lock {lock_file} cannot be created: {why}"
        ) from None
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WarehouseBusy(warehouse, lock_file, _holder(fd)) from None
        if not shared:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        with _held_guard:
            _held[key] = [1, shared]
        try:
            yield lock_file
        finally:
            with _held_guard:
                del _held[key]
            if not shared:
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
