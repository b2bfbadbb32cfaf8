"""Device samples (I2): file -> DuckDB directly, validated inside the database.

A 5,120-GPU cluster at 1 Hz writes 442 million rows a day, so samples never pass through pandas.
Each file is read as text into a temporary table (DuckDB's reject store catches structurally broken
lines with their line numbers), every value is cast with ``try_cast``, and the first contract rule a
row breaks sends it to ``raw.quarantine``; the same conservation rows in = staged + quarantined holds.
A file whose bytes repeat an earlier telemetry file's is not read at all; the ledger records it as a duplicate.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from cost_pipeline.contract.schemas import DEVICE_SAMPLE_ACTIVITY_COLUMNS, DEVICE_SAMPLE_COLUMNS
from cost_pipeline.ingest.records import Rejection, file_sha256
from cost_pipeline.ingest.warehouse import (
    FirstSeen,
    IngestReport,
    begin_source,
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


def _stage_csv(con: duckdb.DuckDBPyConnection, path: Path) -> list[Rejection]:
    """Read one CSV as text into ``landing_samples(line, ...)``; return its structurally broken lines."""
    with path.open("rb") as handle:
        header = handle.readline().decode("utf-8", errors="replace").strip().split(",")
    missing = [c for c in _REQUIRED if c not in [h.strip().strip('"') for h in header]]
    if missing:
        raise ValueError(f"header lacks required column(s): {', '.join(missing)}")
    con.execute("drop table if exists landing_rejects")
    con.execute("drop table if exists landing_scan")
    con.execute(
        "create or replace temp table landing_text as select * from read_csv(?, header = true, "
        "all_varchar = true, store_rejects = true, rejects_table = 'landing_rejects', "
        "rejects_scan = 'landing_scan', auto_detect = true, delim = ',', quote = '\"')",
        [str(path)],
    )
    # A kept row's line number: its position among kept rows, plus the header, plus the broken lines before it.
    con.execute("""
        create or replace temp table landing_samples as
        with broken as (
            select line, cast(line - 2 - (row_number() over (order by line) - 1) as bigint) as kept_before,
                   row_number() over (order by line) as broken_so_far
            from (select distinct line from landing_rejects)
        ), kept as (select rowid as position, * from landing_text)
        select cast(kept.position + 2 + coalesce(broken.broken_so_far, 0) as bigint) as line, kept.* exclude (position)
        from kept asof left join broken on kept.position >= broken.kept_before
    """)
    rows = con.execute("""
        select line, string_agg(distinct cast(error_type as varchar), ', ') as kinds
        from landing_rejects group by line order by line
    """).fetchall()
    return [Rejection(int(line), "csv_structure", f"line is not a well-formed sample row ({kinds})")
            for line, kinds in rows]


def _stage_parquet(con: duckdb.DuckDBPyConnection, path: Path) -> list[Rejection]:
    names = {row[0] for row in con.execute("describe select * from read_parquet(?)", [str(path)]).fetchall()}
    missing = [c for c in _REQUIRED if c not in names]
    if missing:
        raise ValueError(f"columns lack required name(s): {', '.join(missing)}")
    con.execute(
        "create or replace temp table landing_samples as select cast(file_row_number + 1 as bigint) as line, * "
        "exclude (file_row_number) from read_parquet(?, file_row_number = true)",
        [str(path)],
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
        sha = file_sha256(path)
        original = seen.original_of(source_file, sha)
        if original is not None:        # same bytes as an earlier file: not read, recorded as a duplicate
            duplicate_of[source_file] = original
            files.append((source_file, sha, []))
            continue
        try:
            broken = _stage_parquet(con, path) if path.suffix == ".parquet" else _stage_csv(con, path)
        except (ValueError, duckdb.Error) as error:
            message = str(error).splitlines()[0] if isinstance(error, ValueError) else "file is not readable"
            files.append((source_file, sha, [Rejection(0, "file_format", message)]))
            continue
        con.execute(
            f"insert into checked_samples select ?, ?, line, {_typed_select()}, {failed_rule}, {failed_message} "
            "from landing_samples",
            [source_file, sha],
        )
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
