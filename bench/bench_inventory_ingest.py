"""Benchmark: S3 Inventory ingest with contract checks against a plain typed DuckDB load of the same file.

Run on demand (not part of the test suite):

    .venv/bin/python bench/bench_inventory_ingest.py --rows 5000000

The file is AWS's usual shape: header-less gzip CSV, URL-encoded keys, a manifest.json naming its columns. It
reports both timings and their ratio, measured in the same run on the same machine (``against_baseline.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

from against_baseline import compare

from cost_pipeline import duckdb_session
from cost_pipeline.ingest.storage import load_storage_inventory

FIELDS = ("Bucket", "Key", "Size", "LastModifiedDate", "ETag", "StorageClass", "IsLatest")


def write_inventory(folder: Path, rows: int) -> Path:
    """Generate an inventory inside DuckDB and write it as AWS does: quoted, header-less, gzip, with a manifest."""
    data = folder / "data.csv.gz"
    con = duckdb_session.connect()
    con.execute(f"""
        copy (
            select 'ml-prod', 'raw/b' || (i % 50) || '/part+' || i || '%2B.bin', 1024 * (i % 100000),
                   strftime(timestamp '2026-10-01' + to_seconds(i % 2500000), '%Y-%m-%dT%H:%M:%S.000Z'),
                   md5(cast(i as varchar)), case when i % 7 = 0 then 'GLACIER' else 'STANDARD' end, 'true'
            from range({int(rows)}) as t(i)
        ) to '{data}' (header false, delimiter ',', quote '"', force_quote *, compression gzip)
    """)
    con.close()
    manifest = {
        "creationTimestamp": "1795996800000",
        "fileFormat": "CSV",
        "fileSchema": ", ".join(FIELDS),
        "files": [{"key": f"ml-prod/daily/data/{data.name}"}],
    }
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return data


def main() -> None:
    columns = (
        "{"
        + ", ".join(
            f"'{n}': '{t}'"
            for n, t in zip(
                FIELDS, ("VARCHAR", "VARCHAR", "BIGINT", "TIMESTAMP", "VARCHAR", "VARCHAR", "BOOLEAN"), strict=True
            )
        )
        + "}"
    )
    compare(
        "storage",
        write_inventory,
        f"create table s as select * from read_csv(?, header = false, columns = {columns})",
        load_storage_inventory,
    )


if __name__ == "__main__":
    main()
