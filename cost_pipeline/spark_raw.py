"""A warehouse's raw tables as Parquet folders, one per table: what the dbt project's Spark target reads.

The nightly job lands and checks every source in DuckDB, in the ``raw`` schema. When the models outgrow one machine
the same dbt project runs on Apache Spark (``dbt_project/profiles.yml``, target ``spark``; docs/spark.md): its
on-run-start hook (``macros/spark_raw_tables.sql``) makes every raw source a table over ``$COST_SPARK_RAW/<table>``,
and the files' arrivals (``ops.file_arrivals``, which staging reads) one over ``$COST_SPARK_RAW/ops/file_arrivals``,
the folders written here. Times stay as the warehouse has them, UTC without an offset (Spark's session time zone is
UTC in the profile).

    python -m cost_pipeline.spark_raw WAREHOUSE FOLDER
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from cost_pipeline.duckdb_session import connect

# The tables of schema ``ops`` the models read (dbt source ``ops``): the files' arrivals, the order of delivery.
OPS_TABLES = ("file_arrivals",)


def export_raw(warehouse: Path, folder: Path) -> dict[str, int]:
    """Write every table of ``raw`` to ``folder/<table>/part-0.parquet``, and each of ``OPS_TABLES`` to
    ``folder/ops/<table>/part-0.parquet`` (a folder left from an earlier export is replaced); returns each table's
    row count (``ops.<table>`` for those)."""
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, int] = {}
    con = connect(str(warehouse), read_only=True)
    try:
        tables = con.execute(
            "select table_schema, table_name from information_schema.tables "
            "where table_schema = 'raw' or (table_schema = 'ops' and table_name in (select unnest(?))) "
            "order by table_schema desc, table_name",
            [list(OPS_TABLES)],
        ).fetchall()
        for schema, table in tables:
            target = folder / table if schema == "raw" else folder / schema / table
            if target.exists():
                shutil.rmtree(target)
            target.mkdir(parents=True)
            path = str(target / "part-0.parquet").replace("'", "''")
            # COPY answers with the rows it wrote: no second pass over a large table to count them.
            rows = con.execute(f"copy {schema}.\"{table}\" to '{path}' (format parquet)").fetchall()[0][0]
            written[table if schema == "raw" else f"{schema}.{table}"] = rows
    finally:
        con.close()
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m cost_pipeline.spark_raw WAREHOUSE FOLDER", file=sys.stderr)
        return 2
    for table, rows in export_raw(Path(args[0]), Path(args[1])).items():
        print(f"{table}\t{rows}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
