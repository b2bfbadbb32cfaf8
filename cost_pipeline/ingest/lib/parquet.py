"""Reading a Parquet landing file into numbered rows, on a connection locked down to the file's folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb

from cost_pipeline import duckdb_session
from cost_pipeline.ingest.lib.records import ParsedFile, Rejection, RowRejected, file_sha256, whole_file
from cost_pipeline.ingest.lib.warehouse import file_pattern, lock_down


def parquet_rows(path: Path) -> int | None:
    """The rows a Parquet file's footer says it holds, when the footer can be read (its data may not)."""
    con = duckdb_session.connect()
    lock_down(con, path.parent)
    try:
        [(rows,)] = con.execute("select sum(num_rows) from parquet_file_metadata(?)", [file_pattern(path)]).fetchall()
    except duckdb.Error:
        return None
    finally:
        con.close()
    return None if rows is None else int(rows)


def parse_parquet(path: Path, map_row: Callable[[dict[str, object]], dict[str, object]]) -> ParsedFile:
    """A Parquet file as rows numbered from 1; an unreadable file becomes a single line-0 rejection."""
    parsed = ParsedFile(path=path, sha256=file_sha256(path))
    con = duckdb_session.connect()
    lock_down(con, path.parent)
    try:
        cursor = con.execute(
            "select * from read_parquet(?, file_row_number = true) order by file_row_number", [file_pattern(path)]
        )
        names = [d[0] for d in cursor.description]
        records = cursor.fetchall()
    except duckdb.Error:
        records = parquet_rows(path) or 1
        parsed.rows_in = records
        parsed.rejections.append(whole_file("file_format", "file is not readable Parquet", records))
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
