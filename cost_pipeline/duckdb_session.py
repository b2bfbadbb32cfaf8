"""Every DuckDB connection the pipeline opens runs in UTC, whatever the host's ``TZ``.

DuckDB takes its session ``TimeZone`` from the host, and ``current_date``, ``now()`` and every cast between
TIMESTAMPTZ and TIMESTAMP follow it: on a host at +05:30 a zoned time would land five and a half hours off. The
pipeline's times are UTC (``ingest.lib.timestamps``), so each connection opened here - the warehouse (ingest,
publishing, the CLI's reads) and the in-memory ones that read files - is set to UTC before anything runs on it.
dbt's connection has the same setting in its profile (``dbt_project/profiles.yml``, ``settings: TimeZone``).

The setting is global to the database instance, so a cursor of the connection (which DuckDB opens as a
connection of its own) is in UTC too. It cannot be passed in ``duckdb.connect``'s config: the time zone
belongs to the ICU extension, which DuckDB loads on first use, not while connecting.
"""

from __future__ import annotations

from typing import Any

import duckdb

SESSION_TIME_ZONE = "UTC"


def connect(
    database: str = ":memory:", read_only: bool = False, config: dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` with the session time zone set to UTC."""
    con = duckdb.connect(database, read_only=read_only, config=config or {})
    try:
        con.execute(f"set global TimeZone = '{SESSION_TIME_ZONE}'")
    except BaseException:
        con.close()
        raise
    return con
