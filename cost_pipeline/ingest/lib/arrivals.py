"""When each landing file's bytes were first seen: ``ops.file_arrivals``, what the freshness checks read.

The file ledger (``raw.ingested_files``) says which files a source holds and their sha256, but not when they came:
it is rebuilt by every load, and raw must stay the same table, row for row, whenever the same files are loaded
again (R16). So the first sighting of each (source, sha256) is kept beside it, in schema ``ops``, which no mart
reads: a row is added the first time a load's ledger holds bytes the table has not seen, and never changed. A
renamed file is no delivery (same bytes); a changed one is. A file that could not be opened is no delivery either.
"""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb

from cost_pipeline.ingest.lib.records import UNREAD_SHA256

SCHEMA = "ops"
_ARRIVALS_DDL = """
create table if not exists ops.file_arrivals (
    source varchar not null,
    file_sha256 varchar not null,
    first_seen_at timestamp not null
)"""


def _ensure(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"create schema if not exists {SCHEMA}")
    con.execute(_ARRIVALS_DDL)


def record_arrivals(con: duckdb.DuckDBPyConnection, source: str, now: datetime | None = None) -> int:
    """Add every sha256 the ledger holds for ``source`` that was never seen before, first seen ``now`` (naive UTC);
    returns how many were new."""
    _ensure(con)
    seen_at = now or datetime.now(UTC).replace(tzinfo=None)
    added = con.execute(
        "insert into ops.file_arrivals select distinct source, file_sha256, ? from raw.ingested_files as f "
        "where source = ? and file_sha256 <> ? and not exists (select 1 from ops.file_arrivals as a "
        "where a.source = f.source and a.file_sha256 = f.file_sha256) returning file_sha256",
        [seen_at, source, UNREAD_SHA256],
    ).fetchall()
    return len(added)


def newest_arrival(con: duckdb.DuckDBPyConnection, source: str) -> datetime | None:
    """When ``source`` last delivered bytes the warehouse had not seen (naive UTC); None if it never did."""
    _ensure(con)
    (newest,) = con.execute("select max(first_seen_at) from ops.file_arrivals where source = ?", [source]).fetchone()
    return newest
