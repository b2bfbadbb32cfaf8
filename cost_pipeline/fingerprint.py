"""An ordered content hash per warehouse table, to show that a re-run or a rebuild gives the same marts (R16)."""

from __future__ import annotations

from pathlib import Path

from cost_pipeline import duckdb_session
from cost_pipeline.ingest.lib.warehouse import quote


def table_fingerprints(warehouse: str | Path, schema: str = "marts") -> dict[str, str]:
    """sha256 of every table in ``schema``: its column names and types, then its rows in sorted order."""
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
            relation = f"{quote(schema)}.{quote(table)}"
            (digest,) = con.execute(
                f"""
                select sha256(
                    (select string_agg(column_name || ' ' || data_type, ', ' order by ordinal_position)
                     from information_schema.columns where table_schema = ? and table_name = ?)
                    || chr(10) || coalesce(string_agg(row_text, chr(10) order by row_text), ''))
                from (select cast(t as varchar) as row_text from {relation} as t)
            """,
                [schema, table],
            ).fetchone()
            fingerprints[table] = digest
        return fingerprints
    finally:
        con.close()
