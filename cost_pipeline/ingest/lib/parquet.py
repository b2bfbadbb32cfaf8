"""Reading a Parquet landing file into numbered rows, on a connection locked down to the file's folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb

from cost_pipeline.ingest.lib.records import ParsedFile, Rejection, RowRejected, file_sha256
from cost_pipeline.ingest.lib.warehouse import file_pattern, lock_down


def parse_parquet(path: Path, map_row: Callable[[dict[str, object]], dict[str, object]]) -> ParsedFile:
    """A Parquet file as rows numbered from 1; an unreadable file becomes a single line-0 rejection."""
    parsed = ParsedFile(path=path, sha256=file_sha256(path))
    con = duckdb.connect()
    lock_down(con, path.parent)
    try:
        cursor = con.execute("select * from read_parquet(?, file_row_number = true) order by file_row_number",
                             [file_pattern(path)])
        names = [d[0] for d in cursor.description]
        records = cursor.fetchall()
    except duckdb.Error:
        parsed.rows_in = 1
        parsed.rejections.append(Rejection(0, "file_format", "file is not readable Parquet"))
        return parsed
    finally:
        con.close()
    for values in records:
        row = dict(zip(names, values, strict=True))
        row["source_line"] = int(row.pop("file_row_number")) + 1
        parsed.rows_in += 1
        try:
            parsed.rows.append(dict(map_row(row), source_line=row["source_line"]))
        except RowRejected as error:
            parsed.rejections.append(Rejection(row["source_line"], error.rule, str(error)))
    return parsed
