"""When each landing file's bytes were first seen: ``ops.file_arrivals``, what the freshness checks read.

The file ledger (``raw.ingested_files``) says which files a source holds and their sha256, but not when they came:
it is rebuilt by every load, and raw must stay the same table, row for row, whenever the same files are loaded
again (R16). So the first sighting of each (source, sha256) is kept beside it, in schema ``ops``, which no mart
reads: a row is added the first time a load's ledger holds bytes the table has not seen, and never changed. A
renamed file is no delivery (same bytes); a changed one is. A file that could not be opened is no delivery either.
Staging reads it too (dbt source ``ops.file_arrivals``): a record delivered by several files is kept from the one
that arrived later (``dbt_project/macros/newest_delivery.sql``).
"""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb

from cost_pipeline.ingest.lib.records import UNREAD_SHA256

SCHEMA = "ops"
TABLE = "file_arrivals"
# The table's description: the Dagster asset's, and the dbt source's (dbt_project/models/staging/_raw__sources.yml).
DESCRIPTION = (
    "When each landing file's bytes were first seen by a load, per source and sha256: the order of delivery. "
    "Staging keeps a record's delivery from the file that arrived later (files of one load: the last by path); "
    "rows whose bytes have none (loaded before arrivals were recorded) are the oldest."
)
_ARRIVALS_DDL = """
create table if not exists ops.file_arrivals (
    source varchar not null,
    file_sha256 varchar not null,
    first_seen_at timestamp not null
)"""


def ensure_arrivals(con: duckdb.DuckDBPyConnection) -> None:
    """Make ``ops.file_arrivals`` if the warehouse has none: staging reads it (the order of delivery) every night,
    also after a night whose every load failed."""
    con.execute(f"create schema if not exists {SCHEMA}")
    con.execute(_ARRIVALS_DDL)


def record_arrivals(con: duckdb.DuckDBPyConnection, source: str, now: datetime | None = None) -> int:
    """Add every sha256 the ledger holds for ``source`` that was never seen before, first seen ``now`` (naive UTC);
    returns how many were new."""
    ensure_arrivals(con)
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
    ensure_arrivals(con)
    [(newest,)] = con.execute("select max(first_seen_at) from ops.file_arrivals where source = ?", [source]).fetchall()
    return newest
