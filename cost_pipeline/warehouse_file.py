"""Whether the warehouse file can be used at all, asked before a command touches it.

A warehouse path that is a directory, a file that is not a DuckDB database (random bytes, truncated), or one that
cannot be opened for writing is one line on stderr and exit code 5 (``UNUSABLE_EXIT``), never a traceback from
the middle of a night. A file held by another process is not unusable: the ingest steps retry it.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from cost_pipeline import duckdb_session

UNUSABLE_EXIT = 5


class WarehouseUnusable(RuntimeError):
    """The warehouse cannot be opened, read or written; the message is one line naming the file."""


def check_warehouse(path: Path, must_exist: bool = False, read_only: bool = False) -> None:
    """Raise ``WarehouseUnusable`` unless ``path`` is, or can become, a writable DuckDB database; with ``read_only``
    (commands that only read it, ``must_exist`` too) unless it is a DuckDB database this process can read, opened
    read-only so that other readers can have it open at the same time.

    Opening a path that does not exist creates an empty database there, as the night's first step would.
    """
    if path.is_dir():
        raise WarehouseUnusable(f"warehouse {path} is a directory, not a DuckDB file")
    if must_exist and not path.exists():
        raise WarehouseUnusable(f"warehouse {path} does not exist")
    try:
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        con = duckdb_session.connect(str(path), read_only=read_only)
        try:
            con.execute("select count(*) from duckdb_tables()").fetchall()
        finally:
            con.close()
    except duckdb.Error as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if "lock" in first.lower():
            return  # held by another process for a moment: the ingest steps wait and retry
        raise WarehouseUnusable(f"warehouse {path} cannot be used: {first}") from None
    except OSError as error:
        raise WarehouseUnusable(f"warehouse {path} cannot be used: {error.strerror or error}") from None
