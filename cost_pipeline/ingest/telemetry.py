"""Device samples (I2): file -> DuckDB directly, validated inside the database.

A 5,120-GPU cluster at 1 Hz writes 442 million rows a day, so samples never pass through pandas.
Each file is read as text into a temporary table (DuckDB's reject store catches structurally broken
lines with their line numbers), every value is cast with ``try_cast``, and the first contract rule a
row breaks sends it to ``raw.quarantine``; the same conservation rows in = staged + quarantined holds.
A file whose bytes repeat an earlier telemetry file's is not read at all; the ledger records it as a duplicate.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import duckdb

from cost_pipeline.contract.schemas import DEVICE_SAMPLE_ACTIVITY_COLUMNS, DEVICE_SAMPLE_COLUMNS
from cost_pipeline.ingest.records import Rejection, file_sha256
from cost_pipeline.ingest.warehouse import (
    FirstSeen,
    IngestReport,
    begin_source,
    file_pattern,
    quote,
    raw_table_ddl,
    record_duplicate,
    record_file,
)

SOURCE = "device_samples"
FOLDER = "telemetry"
PATTERNS = ("*.csv", "*.parquet")

# (rule, condition that breaks it, message); evaluated in order, the first broken rule is recorded.
_RULES: list[tuple[str, str, str]] = [
    ("timestamp.parseable", "try_cast(\"timestamp\" as timestamp) is null", "timestamp is missing or not a timestamp"),
    ("hostname.present", "nullif(trim(hostname), '') is null", "hostname is empty"),
    ("gpu.index", "coalesce(try_cast(gpu as integer) < 0, true)", "gpu is not a non-negative integer"),
    *[(f"{c}.unit_range", f"coalesce(not (try_cast({quote(c)} as double) between 0 and 1), true)",
       f"{c} is not an activity between 0 and 1") for c in DEVICE_SAMPLE_ACTIVITY_COLUMNS],
    *[(f"{c}.non_negative", f"coalesce(try_cast({quote(c)} as double) < 0, true)",
       f"{c} is not a non-negative number")
      for c in ("DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES")],
    ("DCGM_FI_DEV_POWER_USAGE.non_negative",
     "DCGM_FI_DEV_POWER_USAGE is not null and coalesce(try_cast(DCGM_FI_DEV_POWER_USAGE as double) < 0, true)",
     "DCGM_FI_DEV_POWER_USAGE is not a non-negative number"),
]
_REQUIRED = [name for name, _ in DEVICE_SAMPLE_COLUMNS if name not in ("job_id", "DCGM_FI_DEV_POWER_USAGE")]


def _failed_rule_sql() -> tuple[str, str]:
    rule = "case " + " ".join(f"when {cond} then '{r}'" for r, cond, _ in _RULES) + " end"
    message = "case " + " ".join(f"when {cond} then '{m}'" for _, cond, m in _RULES) + " end"
    return rule, message


def _typed_select() -> str:
    casts = []
    for name, sql_type in DEVICE_SAMPLE_COLUMNS:
        expr = f"nullif(trim(cast({quote(name)} as varchar)), '')" if sql_type == "VARCHAR" else (
            f"try_cast({quote(name)} as {sql_type})")
        casts.append(f"{expr} as {quote(name)}")
    return ", ".join(casts)


def _sample_columns(present: set[str]) -> str:
    """The sample columns, by the names DuckDB gave them; an absent optional column is null."""
    missing = [c for c in _REQUIRED if c not in present]
    if missing:
        raise ValueError(f"header lacks required column(s): {', '.join(missing)}")
    return ", ".join(quote(name) if name in present else f"cast(null as varchar) as {quote(name)}"
                     for name, _ in DEVICE_SAMPLE_COLUMNS)


def _columns_of(con: duckdb.DuckDBPyConnection, relation: str, params: list | None = None) -> set[str]:
    return {row[0] for row in con.execute(f"describe {relation}", params or []).fetchall()}


_SCAN_CHUNK = 1 << 20
_BLANK_LINE = re.compile(rb"\n\r?(?=\n)")     # a line end, then an empty line (LF or CRLF) ending at the next \n


def scan_csv(path: Path) -> tuple[str, list[int]]:
    """The file's sha256 and the numbers of its empty lines after the first, in one pass over its bytes.

    DuckDB's CSV reader skips an empty line without a trace but counts it in its line numbers, so the line
    number of every kept row after one depends on knowing where they are.
    """
    digest = hashlib.sha256()
    blanks: list[int] = []
    newlines = 0            # line ends in the chunks read so far
    tail = b""              # the previous chunk's last bytes: a blank line may straddle two chunks
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_SCAN_CHUNK), b""):
            digest.update(chunk)
            window = tail + chunk
            counted, position = newlines - tail.count(b"\n"), 0     # line ends before window[position]
            for match in _BLANK_LINE.finditer(window):
                if match.end() < len(tail):
                    continue            # found with the previous chunk
                counted += window.count(b"\n", position, match.start() + 1)
                position = match.start() + 1
                blanks.append(counted + 1)
            newlines += chunk.count(b"\n")
            tail = window[-2:]
    return digest.hexdigest(), blanks


def _stage_csv(con: duckdb.DuckDBPyConnection, path: Path, blank_lines: list[int]) -> list[Rejection]:
    """Read one CSV as text into ``landing_samples(line, ...)``; return its structurally broken lines.

    Line numbers are DuckDB's: physical lines, except that a line end inside a quoted value does not count.
    An empty line is not a row (as in every CSV source) but keeps its number (``blank_lines``, from
    ``scan_csv``); the scan reads bytes, so an empty line inside a quoted value would shift later numbers.
    """
    with path.open("rb") as handle:     # a cheap first look, before DuckDB reads the file
        header = handle.readline().decode("utf-8-sig", errors="replace").strip().split(",")
    missing = [c for c in _REQUIRED if c not in [h.strip().strip('"') for h in header]]
    if missing:
        raise ValueError(f"header lacks required column(s): {', '.join(missing)}")
    con.execute("drop table if exists landing_rejects")
    con.execute("drop table if exists landing_scan")
    con.execute(
        "create or replace temp table landing_text as select * from read_csv(?, header = true, "
        "all_varchar = true, store_rejects = true, rejects_table = 'landing_rejects', "
        "rejects_scan = 'landing_scan', auto_detect = true, skip = 0, delim = ',', quote = '\"')",
        [file_pattern(path)],
    )
    selected = _sample_columns(_columns_of(con, "landing_text"))
    # A kept row's line number: its position among kept rows, plus the header, plus the lines before it that
    # hold no kept row (broken lines and empty ones). Adjacent skipped lines share ``kept_before``; the last wins.
    con.execute(f"""
        create or replace temp table landing_samples as
        with skipped as (
            select line, row_number() over (order by line) as skipped_so_far
            from (select line from landing_rejects union select unnest(?::bigint[]))
            where line > 1
        ), gaps as (
            select cast(line - 2 - (skipped_so_far - 1) as bigint) as kept_before, max(skipped_so_far) as skipped_so_far
            from skipped group by all
        ), kept as (select rowid as landing_position, {selected} from landing_text)
        select cast(kept.landing_position + 2 + coalesce(gaps.skipped_so_far, 0) as bigint) as line,
               kept.* exclude (landing_position)
        from kept asof left join gaps on kept.landing_position >= gaps.kept_before
    """, [blank_lines])
    rows = con.execute("""
        select line, string_agg(distinct cast(error_type as varchar), ', ') as kinds
        from landing_rejects group by line order by line
    """).fetchall()
    return [Rejection(int(line), "csv_structure", f"line is not a well-formed sample row ({kinds})")
            for line, kinds in rows]


def _stage_parquet(con: duckdb.DuckDBPyConnection, path: Path) -> list[Rejection]:
    selected = _sample_columns(_columns_of(con, "select * from read_parquet(?)", [file_pattern(path)]))
    con.execute(
        f"create or replace temp table landing_samples as select cast(file_row_number + 1 as bigint) as line, "
        f"{selected} from read_parquet(?, file_row_number = true)",
        [file_pattern(path)],
    )
    return []


def load_device_samples(con: duckdb.DuckDBPyConnection, landing_dir: Path) -> IngestReport:
    """Replace ``raw.device_samples`` from every telemetry file, quarantining what breaks the contract.

    Files are read and checked into connection-local temporary tables first, so an unreadable file costs
    only itself; the raw table, quarantine and file ledger then change together in one short transaction.
    """
    report = IngestReport(SOURCE)
    folder = landing_dir / FOLDER
    paths = sorted({p for pattern in PATTERNS for p in folder.glob(pattern) if p.is_file()})
    failed_rule, failed_message = _failed_rule_sql()
    columns = ", ".join(quote(n) for n, _ in DEVICE_SAMPLE_COLUMNS)
    con.execute(f"""
        create or replace temp table checked_samples as
        select cast(null as varchar) as source_file, cast(null as varchar) as file_sha256, cast(null as bigint) as line,
               {_typed_select()}, cast(null as varchar) as failed_rule, cast(null as varchar) as failed_message
        from (select {", ".join(f"null as {quote(n)}" for n, _ in DEVICE_SAMPLE_COLUMNS)}) where false
    """)
    files: list[tuple[str, str, list[Rejection]]] = []
    duplicate_of: dict[str, str] = {}
    seen = FirstSeen()
    for path in paths:
        source_file = path.relative_to(landing_dir).as_posix()
        sha, blank_lines = (file_sha256(path), []) if path.suffix == ".parquet" else scan_csv(path)
        original = seen.original_of(source_file, sha)
        if original is not None:        # same bytes as an earlier file: not read, recorded as a duplicate
            duplicate_of[source_file] = original
            files.append((source_file, sha, []))
            continue
        try:
            broken = _stage_parquet(con, path) if path.suffix == ".parquet" else _stage_csv(con, path, blank_lines)
            # One statement: a file's rows are all checked in, or (it fails) none are and the file is quarantined.
            con.execute(
                f"insert into checked_samples select ?, ?, line, {_typed_select()}, {failed_rule}, {failed_message} "
                "from landing_samples",
                [source_file, sha],
            )
        except (ValueError, duckdb.Error) as error:
            message = str(error).splitlines()[0] if isinstance(error, ValueError) else "file is not readable"
            files.append((source_file, sha, [Rejection(0, "file_format", message)]))
            continue
        files.append((source_file, sha, broken))
    for table in ("landing_text", "landing_samples", "landing_rejects", "landing_scan"):
        con.execute(f"drop table if exists {table}")

    begin_source(con, SOURCE)
    try:
        con.execute(raw_table_ddl(SOURCE, DEVICE_SAMPLE_COLUMNS))
        con.execute(f"insert into raw.device_samples select {columns}, source_file, line, file_sha256 "
                    "from checked_samples where failed_rule is null order by source_file, line")
        con.execute("insert into raw.quarantine select 'device_samples', source_file, file_sha256, line, failed_rule, "
                    "failed_message, null from checked_samples where failed_rule is not null")
        counts = {f: (staged, failed) for f, staged, failed in con.execute(
            "select source_file, count(*) filter (where failed_rule is null), "
            "count(*) filter (where failed_rule is not null) from checked_samples group by source_file").fetchall()}
        examples = con.execute(
            "select source_file, line, failed_rule, failed_message from checked_samples where failed_rule is not null "
            "order by source_file, line limit 20").fetchall()
        by_rule = con.execute("select failed_rule, count(*) from checked_samples where failed_rule is not null "
                              "group by failed_rule").fetchall()
        for source_file, sha, rejections in files:
            if source_file in duplicate_of:
                record_duplicate(con, SOURCE, source_file, sha, duplicate_of[source_file], report)
                continue
            staged, failed = counts.get(source_file, (0, 0))
            record_file(con, SOURCE, source_file, sha, staged + failed + len(rejections), staged, rejections, report,
                        checked_in_database=failed)
        report.by_rule.update(dict(by_rule))
        report.rows_quarantined += sum(failed for _, failed in counts.values())
        report.examples.extend(Rejection(line, rule, message).describe(f) for f, line, rule, message in examples)
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    finally:
        con.execute("drop table if exists checked_samples")
    return report
