"""Small helpers the test modules share."""

from __future__ import annotations

from pathlib import Path

import duckdb


def query(warehouse: str | Path, sql: str, params: list | None = None) -> list[tuple]:
    """Rows of ``sql`` on a read-only connection to ``warehouse``, closed before returning."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()
