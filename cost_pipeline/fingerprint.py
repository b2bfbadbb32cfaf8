"""An ordered content hash per warehouse table, to show that a re-run or a rebuild gives the same marts (R16)."""

from __future__ import annotations

from pathlib import Path

from cost_pipeline import duckdb_session
from cost_pipeline.ingest.lib.warehouse import quote

# Published files carry the night they were published on every row (cost_pipeline.publish): not content.
PUBLISHED_AT = "as_of"


def table_fingerprints(
    warehouse: str | Path, schema: str = "marts", ignore: tuple[str, ...] = (PUBLISHED_AT,)
) -> dict[str, str]:
    """sha256 of every table in ``schema``: its column names and types, then its rows in sorted order; the columns
    named in ``ignore`` left out (by default a published file's ``as_of``, so publishing twice compares equal)."""
    con = duckdb_session.connect(str(warehouse), read_only=True)
    try:
        tables = [
            t
            for (t,) in con.execute(
                "select table_name from information_schema.tables where table_schema = ? order by table_name", [schema]
            ).fetchall()
        ]
        fingerprints = {}
        for table in tables:
            columns = con.execute(
                "select column_name, data_type from information_schema.columns where table_schema = ? "
                "and table_name = ? and not list_contains(?, column_name) order by ordinal_position",
                [schema, table, list(ignore)],
            ).fetchall()
            kept = ", ".join(quote(name) for name, _ in columns)
            header = ", ".join(f"{name} {data_type}" for name, data_type in columns)
            # A table of ignored columns only (a published file's main.published) hashes as its header.
            rows = f"select {kept} from {quote(schema)}.{quote(table)}" if columns else "select 1 where false"
            [(digest,)] = con.execute(
                "select sha256(? || chr(10) || coalesce(string_agg(row_text, chr(10) order by row_text), '')) "
                f"from (select cast(t as varchar) as row_text from ({rows}) as t)",
                [header],
            ).fetchall()
            fingerprints[table] = digest
        return fingerprints
    finally:
        con.close()
