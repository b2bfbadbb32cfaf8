"""Writing raw tables, the quarantine and the per-file ledger into the DuckDB warehouse.

Each source replaces its own rows in one transaction, so a reader never sees half a source and a
re-run of the same landing folder gives the same tables. Identifiers come from the contract schemas
(package code); every path and value travels as a parameter.

The file ledger (``raw.ingested_files``) holds each file's sha256. A file whose bytes equal those of a file
of the same source already seen in this load (files go in sorted order; the first one wins) loads no rows:
it is recorded with ``duplicate_of`` naming that file and rows in = staged = quarantined = 0.
A file refused whole (not text, a wrong header, an unreadable Parquet file) has ``refused_whole`` set: it holds
one line-0 row in the quarantine, and its ledger row counts every record it held as in and quarantined (its lines
less the header; a Parquet file's rows when its footer says), so the ledger shows how much was not loaded.
A source that declares an extent (``Source.extent``) has ``raw.<source>_extent`` beside its raw table: those columns
of every row each file holds, quarantined ones too (what the file covers), kept and replaced with the file's rows.

Every connection runs under the DuckDB memory limit and spills beside the warehouse (``duckdb_memory``).
An ingest connection can be locked down (``connect(path, readable_dir=...)``): DuckDB may then open files
only under that folder, cannot attach, copy out, install or load extensions, and cannot change a setting.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from cost_pipeline import duckdb_session
from cost_pipeline.contract.schemas import SourceSchema
from cost_pipeline.duckdb_memory import limit_memory
from cost_pipeline.ingest.lib.arrivals import ensure_arrivals
from cost_pipeline.ingest.lib.records import UNREAD_SHA256, ParsedFile, Rejection, file_sha256, refusal, whole_file

RAW = "raw"
# The quarantine rule of a row held after a dbt test (cost_pipeline.dbt_failures), followed by the test's name.
HELD_RULE = "dbt:"
# The bookkeeping tables every source writes to, with their descriptions (the dbt source's).
BOOKKEEPING_TABLES = {
    "quarantine": "Every input row that broke the contract, with file, line, rule and message.",
    "ignored_files": "Every landing file that no source reads (it matches no source's pattern), so none is "
    "skipped without a word.",
    "ingested_files": "One row per landing file and source, rows in = rows staged + rows quarantined; a file "
    "refused whole counts every record it held as quarantined (refused_whole); a file gone from the landing folder "
    "keeps its row and its rows in raw (missing_since).",
    "retractions": "Every file whose rows were taken out of raw by `cost-pipeline retract`: who, when and why.",
    "retraction_batches": "The batches each retracted file fed, read from the night before its retraction (one "
    "row with no batch: it fed none); a retraction with no row here came from a source whose rows are not per "
    "batch.",
}

_QUARANTINE_DDL = """
create table if not exists raw.quarantine (
    source varchar not null,
    source_file varchar not null,
    file_sha256 varchar not null,
    line bigint not null,
    rule varchar not null,
    message varchar not null,
    raw_text varchar
)"""

_FILES_DDL = """
create table if not exists raw.ingested_files (
    source varchar not null,
    source_file varchar not null,
    file_sha256 varchar not null,
    rows_in bigint not null,
    rows_staged bigint not null,
    rows_quarantined bigint not null,
    duplicate_of varchar,
    refused_whole boolean not null default false,
    missing_since timestamp
)"""
_RETRACTIONS_DDL = """
create table if not exists raw.retractions (
    source varchar not null,
    source_file varchar not null,
    file_sha256 varchar not null,
    rows_retracted bigint not null,
    reason varchar not null,
    retracted_by varchar not null,
    retracted_at timestamp not null
)"""
_RETRACTION_BATCHES_DDL = """
create table if not exists raw.retraction_batches (
    source varchar not null,
    source_file varchar not null,
    file_sha256 varchar not null,
    batch_id varchar
)"""
_IGNORED_DDL = """
create table if not exists raw.ignored_files (
    source_file varchar not null,
    folder varchar not null,
    file_sha256 varchar not null,
    size_bytes bigint not null
)"""
# One row per source whose last load failed (rolled back, its raw rows kept as they were); empty on a good night.
_FAILURES_DDL = """
create table if not exists raw.source_failures (
    source varchar not null,
    error varchar not null,
    failed_at timestamp not null,
    last_good_load timestamp
)"""
# Warehouses written before the file ledger knew duplicates and files refused whole gain the columns in place.
_FILES_MIGRATE = (
    "alter table raw.ingested_files add column if not exists duplicate_of varchar",
    "alter table raw.ingested_files add column if not exists refused_whole boolean default false",
    "alter table raw.ingested_files add column if not exists missing_since timestamp",
)


@dataclass
class IngestReport:
    """What one source's load did; counts and rule names only, safe for logs and Dagster metadata."""

    source: str
    files: int = 0
    rows_in: int = 0
    rows_staged: int = 0
    rows_quarantined: int = 0
    duplicate_files: int = 0
    by_rule: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (file, the earlier file it repeats)
    # Files gone from the landing folder whose rows raw keeps: (file, the night it was first not seen, ISO UTC).
    missing: list[tuple[str, str]] = field(default_factory=list)
    retracted: list[str] = field(default_factory=list)  # present files whose bytes were retracted: not loaded
    # Files loaded with something assumed that the file did not say ("<file>: <what>"): loaded, but flagged.
    flags: list[str] = field(default_factory=list)
    # Files gone from the landing folder whose rows a dbt test held: (file, rows put back into raw to be tested again).
    released: list[tuple[str, int]] = field(default_factory=list)

    @property
    def conserved(self) -> bool:
        return self.rows_in == self.rows_staged + self.rows_quarantined

    def add_file(self, source_file: str, rows_in: int, staged: int, rejections: Sequence[Rejection]) -> None:
        self.files += 1
        self.rows_in += rows_in
        self.rows_staged += staged
        self.rows_quarantined += sum(r.records for r in rejections)
        for rejection in rejections:
            self.by_rule[rejection.rule] += rejection.records
            if len(self.examples) < 20:
                self.examples.append(rejection.describe(source_file))

    def add_duplicate(self, source_file: str, duplicate_of: str) -> None:
        """A file (counted in ``files``) that repeats an earlier file's bytes; it adds no rows."""
        self.files += 1
        self.duplicate_files += 1
        self.duplicates.append((source_file, duplicate_of))


def lock_down(con: duckdb.DuckDBPyConnection, readable_dir: str | Path) -> None:
    """Restrict ``con``'s database to files under ``readable_dir`` and lock its configuration.

    After this, reading or writing a file anywhere else, ``ATTACH`` of a database file, ``INSTALL`` and
    ``LOAD`` of an extension that is not built in, and any ``SET``/``RESET`` are refused. The order matters:
    ``allowed_directories`` cannot be changed once external access is off, and nothing can once locked.
    The settings belong to the database instance, so every connection to it that is open at the same
    time (cursors, and ``duckdb.connect`` of the same file in this process) is restricted too.

    Note: DuckDB's allowed directories are readable *and writable* (``COPY ... TO`` a file under
    ``readable_dir`` succeeds); everything outside it is refused. Symbolic links pointing outside it are
    refused as well.
    """
    directory = Path(readable_dir).resolve()
    con.execute("set allowed_directories = ?", [[str(directory)]])
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")


_GLOB_CHARACTER = re.compile(r"([*?\[])")


def file_pattern(path: str | Path) -> str:
    """``path`` as DuckDB's file readers (``read_csv``, ``read_parquet``) take it: that one file, by its name.

    The readers expand glob patterns, so a landing file named ``dcgm*.csv`` would read every telemetry file
    under its own name and ``x[1].csv`` would read ``x1.csv``. Each ``*``, ``?`` and ``[`` is put in a
    bracket class of its own (``[*]``), which matches that character only.
    """
    return _GLOB_CHARACTER.sub(r"[\1]", str(path))


def connect(
    path: str | Path, readable_dir: str | Path | None = None, memory_limit: str | None = None
) -> duckdb.DuckDBPyConnection:
    """Open the warehouse and make sure the quarantine, the file ledger and the files' arrivals exist.

    The connection runs under the DuckDB memory limit (``memory_limit``, else ``COST_DUCKDB_MEMORY_LIMIT``, else
    3 GiB) and spills beside the warehouse (``cost_pipeline.duckdb_memory``). With ``readable_dir`` (the landing
    folder, for ingest) it is then locked down to that folder (``lock_down``); without it it is unrestricted.
    """
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    con = duckdb_session.connect(str(path))
    try:
        limit_memory(con, Path(path), memory_limit)
        con.execute(f"create schema if not exists {RAW}")
        con.execute(_QUARANTINE_DDL)
        con.execute(_FILES_DDL)
        con.execute(_IGNORED_DDL)
        con.execute(_RETRACTIONS_DDL)
        con.execute(_RETRACTION_BATCHES_DDL)
        con.execute(_FAILURES_DDL)
        for migrate in _FILES_MIGRATE:
            con.execute(migrate)
        ensure_arrivals(con)
        if readable_dir is not None:
            lock_down(con, readable_dir)
    except BaseException:
        con.close()
        raise
    return con


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def raw_table_ddl(table: str, columns: Sequence[tuple[str, str]]) -> str:
    body = ",\n    ".join(f"{quote(name)} {sql_type}" for name, sql_type in columns)
    return (
        f"create or replace table {RAW}.{quote(table)} (\n    {body},\n"
        "    source_file varchar not null,\n    source_line bigint not null,\n    file_sha256 varchar not null\n)"
    )


def retracted_files(con: duckdb.DuckDBPyConnection, source: str) -> set[tuple[str, str]]:
    """(file, sha256) of every retracted delivery of ``source``: their rows are never loaded or kept again."""
    return {
        (f, sha)
        for f, sha in con.execute(
            "select source_file, file_sha256 from raw.retractions where source = ?", [source]
        ).fetchall()
    }


RETRACTED_CONTENT = "retracted_content"


def retracted_contents(con: duckdb.DuckDBPyConnection, source: str) -> dict[str, str]:
    """sha256 -> the retraction that took those bytes out ("<file>, retracted on <when> UTC"), for every retracted
    delivery of ``source``: a retraction is by content too, so the same bytes under another name load nothing."""
    return {
        sha: f"{name}, retracted on {at:%Y-%m-%d %H:%M} UTC"
        for sha, name, at in con.execute(
            "select file_sha256, min_by(source_file, retracted_at), min(retracted_at) from raw.retractions "
            "where source = ? group by file_sha256",
            [source],
        ).fetchall()
    }


def retracted_copy(retraction: str, records: int) -> Rejection:
    """The line-0 rejection of a file holding a retracted file's bytes under another name, with every record."""
    return whole_file(RETRACTED_CONTENT, f"file holds the same bytes as {retraction} (raw.retractions)", records)


def missing_files(con: duckdb.DuckDBPyConnection, source: str) -> list[tuple[str, str]]:
    """(file, the night it was first not seen, ISO UTC) of every file of ``source`` gone from the landing folder."""
    return [
        (f, since.isoformat(sep=" ", timespec="seconds"))
        for f, since in con.execute(
            "select source_file, missing_since from raw.ingested_files where source = ? and missing_since is not null "
            "order by source_file",
            [source],
        ).fetchall()
    ]


def begin_source(
    con: duckdb.DuckDBPyConnection,
    source: str,
    columns: Sequence[tuple[str, str]],
    present: dict[str, str],
    report: IngestReport,
    reused: Collection[str] = (),
    key_of: Callable[[str, str], str] | None = None,
) -> list[str]:
    """Start the transaction that replaces one source's raw table, quarantine and ledger rows from ``present``
    (file -> sha256 of the files found tonight), keeping what earlier nights loaded from files now gone.

    Raw is append-only by file: a file in the ledger that is not in the landing folder any more keeps its ledger
    row (``missing_since``: the night it was first not seen), its quarantined lines and its raw rows, unless its
    bytes are there under another name (moved) or it was retracted (``cost-pipeline retract``); its rows that a dbt
    test held go back into raw to be tested again (``release_held_rows``). A file found
    again under its name is read anew: other bytes are a redelivery and replace the file's rows. For a source whose
    same bytes can be another file's data (``key_of``: file, sha256 -> what tells them apart; ``present`` then maps
    each file to that), a file gone is a move only when a present file has its key, not merely its bytes. A present
    file in ``reused`` (its bytes loaded before by the same loader, ``in_database``) keeps its rows, lines and ledger
    row as they are. When the raw table's columns are the contract's, only the rows of files not kept are deleted
    (and raw is not touched when every file of the ledger is kept); otherwise the table is created anew (its columns
    follow the contract) with the kept rows in it. Returns the files whose rows are kept.
    """
    con.execute("begin transaction")
    retracted = retracted_files(con, source)
    moved_to = set(present.values())
    ledger = con.execute(
        "select source_file, file_sha256 from raw.ingested_files where source = ? order by source_file", [source]
    ).fetchall()
    kept = [
        (f, sha)
        for f, sha in ledger
        if f not in present
        and (sha if key_of is None else key_of(f, sha)) not in moved_to
        and (f, sha) not in retracted
        and sha != UNREAD_SHA256
    ]
    names = [f for f, _ in kept] + sorted(reused)
    # An IN over unnest, not list_contains: one file of thousands kept is a hash join, not a scan of the list per row.
    not_kept = "source_file not in (select unnest(?::varchar[]))"
    con.execute(f"delete from raw.quarantine where source = ? and {not_kept}", [source, names])
    con.execute(f"delete from raw.ingested_files where source = ? and {not_kept}", [source, names])
    con.execute(
        "update raw.ingested_files set missing_since = coalesce(missing_since, ?) "
        "where source = ? and source_file in (select unnest(?::varchar[]))",
        [datetime.now(UTC).replace(tzinfo=None), source, [f for f, _ in kept]],
    )
    report.missing.extend(missing_files(con, source))
    _replace_raw_table(con, source, columns, names, keep_all=set(names) == {f for f, _ in ledger})
    report.released.extend(release_held_rows(con, source, [f for f, _ in kept]))
    return names


def _replace_raw_table(
    con: duckdb.DuckDBPyConnection, source: str, columns: Sequence[tuple[str, str]], names: list[str], keep_all: bool
) -> None:
    """Keep the raw rows of the files in ``names`` and no others (``keep_all``: every file of the ledger is kept);
    a raw table whose columns are not the contract's is created anew with the kept rows in it."""
    raw_table = f"{RAW}.{quote(source)}"
    existing = raw_columns(con, source)
    if existing == contract_columns(con, columns):
        if not keep_all:  # a file's rows leave: one pass over raw, only then
            con.execute(f"delete from {raw_table} where source_file not in (select unnest(?::varchar[]))", [names])
        return
    existing_names = {n for n, _ in existing}
    carried = [n for n, _ in columns if n in existing_names] + ["source_file", "source_line", "file_sha256"]
    if names and existing:
        listed = ", ".join(quote(n) for n in carried)
        con.execute(
            f"create or replace temp table kept_rows as select {listed} from {raw_table} "
            "where source_file in (select unnest(?::varchar[]))",
            [names],
        )
    con.execute(raw_table_ddl(source, columns))
    if names and existing:
        con.execute(f"insert into {raw_table} ({listed}) select {listed} from kept_rows")
        con.execute("drop table kept_rows")


def release_held_rows(con: duckdb.DuckDBPyConnection, source: str, gone: Sequence[str]) -> list[tuple[str, int]]:
    """Put the rows a dbt test held (rule ``dbt:<test>``, cost_pipeline.dbt_failures) from files gone from the landing
    folder back into raw, from the row each quarantine line keeps (``raw_text``), with their ledger counts: tonight's
    build tests them again, as it tests a present file's rows when the file is read again, and holds them again only
    if they still fail. Only a row read back exactly as it was kept goes back (its columns and their types are still
    the raw table's: read as them, it is written as the same text); one the contract has changed the columns of since
    stays held, and says so every night, until the file is retracted. Returns (file, rows put back) by file."""
    columns = raw_columns(con, source) if gone else []
    if not columns:
        return []
    listed = ", ".join(quote(n) for n, _ in columns)
    con.execute(
        "create or replace temp table released as select source_file, line, rule, row from (select source_file, line, "
        "rule, raw_text, json_transform(raw_text, ?) as row from raw.quarantine where source = ? "
        "and starts_with(rule, ?) and source_file in (select unnest(?::varchar[]))) "
        "where cast(to_json(row) as varchar) = raw_text",
        [json.dumps(dict(columns)), source, HELD_RULE, list(gone)],
    )
    released = con.execute("select source_file, count(*) from released group by 1 order by 1").fetchall()
    if released:
        con.execute(
            f"insert into {RAW}.{quote(source)} ({listed}) select {listed} from "
            "(select unnest(row, recursive := false) from released)"
        )
        con.execute(
            "update raw.ingested_files as f set rows_staged = rows_staged + back.rows, "
            "rows_quarantined = rows_quarantined - back.rows from (select source_file, count(*) as rows from released "
            "group by source_file) as back where f.source = ? and f.source_file = back.source_file",
            [source],
        )
        con.execute(
            "delete from raw.quarantine as q where q.source = ? and exists (select 1 from released as r "
            "where r.source_file = q.source_file and r.line = q.line and r.rule = q.rule)",
            [source],
        )
    con.execute("drop table released")
    return [(f, int(rows)) for f, rows in released]


def raw_columns(con: duckdb.DuckDBPyConnection, source: str) -> list[tuple[str, str]]:
    """The raw table's columns and types, in order (empty when there is none)."""
    [(exists,)] = con.execute(
        "select count(*) from information_schema.tables where table_schema = ? and table_name = ?", [RAW, source]
    ).fetchall()
    if not exists:
        return []
    return [(row[0], row[1]) for row in con.execute(f"describe {RAW}.{quote(source)}").fetchall()]


def contract_columns(con: duckdb.DuckDBPyConnection, columns: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The columns and types, as DuckDB names them, of a raw table created from the contract's ``columns``."""
    typed = [*columns, ("source_file", "varchar"), ("source_line", "bigint"), ("file_sha256", "varchar")]
    listed = ", ".join(f"cast(null as {sql_type}) as {quote(name)}" for name, sql_type in typed)
    return [(row[0], row[1]) for row in con.execute(f"describe select {listed}").fetchall()]


def insert_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    or_replace: bool = False,
) -> None:
    """Insert ``rows`` (values in the order of ``columns``) into ``table`` in one statement, each column one list of
    the table's type for it; ``or_replace``: ``insert or replace``. DuckDB's ``executemany`` runs a statement per row
    (about 1 ms each), and a ``values`` list of many rows binds every value on its own: 5,000 quarantine rows took
    0.9 s and 1.1 s that way, 56 ms as one list a column."""
    if not rows:
        return
    types = {name: sql_type for name, sql_type, *_ in con.execute(f"describe {table}").fetchall()}
    names = ", ".join(quote(column) for column in columns)
    lists = ", ".join(f"unnest(?::{types[column]}[])" for column in columns)
    verb = "insert or replace" if or_replace else "insert"
    con.execute(f"{verb} into {table} ({names}) select {lists}", [list(values) for values in zip(*rows, strict=True)])


_QUARANTINE_COLUMNS = ("source", "source_file", "file_sha256", "line", "rule", "message", "raw_text")
_LEDGER_COLUMNS = (
    "source",
    "source_file",
    "file_sha256",
    "rows_in",
    "rows_staged",
    "rows_quarantined",
    "duplicate_of",
    "refused_whole",
)
_IGNORED_COLUMNS = ("source_file", "folder", "file_sha256", "size_bytes")


class FileLedger:
    """One source's ledger rows (``raw.ingested_files``) and quarantined lines of tonight's files, added file by file
    and written by ``write`` in two statements inside the load's transaction: two statements a file cost about
    4 ms a file (issue 10's many small files)."""

    def __init__(self, source: str, report: IngestReport) -> None:
        self.source = source
        self.report = report
        self._files: list[tuple] = []
        self._lines: list[tuple] = []

    def file(
        self,
        source_file: str,
        sha256: str,
        rows_in: int,
        staged: int,
        rejections: Sequence[Rejection],
        checked_in_database: int = 0,
    ) -> None:
        """A file's ledger row and quarantined lines. ``checked_in_database`` counts rows the caller already
        quarantined with SQL (device samples)."""
        self._lines.extend((self.source, source_file, sha256, r.line, r.rule, r.message, r.raw) for r in rejections)
        quarantined = sum(r.records for r in rejections) + checked_in_database
        refused_whole = any(r.line == 0 for r in rejections)
        self._files.append((self.source, source_file, sha256, rows_in, staged, quarantined, None, refused_whole))
        self.report.add_file(source_file, rows_in, staged, rejections)

    def duplicate(self, source_file: str, sha256: str, duplicate_of: str) -> None:
        """The ledger row of a file whose bytes repeat ``duplicate_of``'s: no rows in, staged or quarantined."""
        self._files.append((self.source, source_file, sha256, 0, 0, 0, duplicate_of, False))
        self.report.add_duplicate(source_file, duplicate_of)

    def write(self, con: duckdb.DuckDBPyConnection) -> None:
        """Write what was added since the last ``write``."""
        insert_rows(con, "raw.quarantine", _QUARANTINE_COLUMNS, self._lines)
        insert_rows(con, "raw.ingested_files", _LEDGER_COLUMNS, self._files)
        self._lines.clear()
        self._files.clear()


def record_ignored(con: duckdb.DuckDBPyConnection, landing_dir: Path, paths: Sequence[Path]) -> list[str]:
    """Replace ``raw.ignored_files`` with ``paths`` (files no source reads); returns their landing-relative names."""
    rows = []
    for path in paths:
        relative = path.relative_to(landing_dir)
        folder = relative.parts[0] if len(relative.parts) > 1 else ""
        readable = refusal(path, landing_dir) is None  # a link out of the landing folder is named, never read
        size = path.stat().st_size if readable else 0
        rows.append([relative.as_posix(), folder, file_sha256(path) if readable else UNREAD_SHA256, size])
    con.execute("begin transaction")
    try:
        con.execute("delete from raw.ignored_files")
        if rows:
            con.executemany("insert into raw.ignored_files values (?, ?, ?, ?)", rows)
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return [row[0] for row in rows]


def extent_table(table: str) -> str:
    """The raw table beside ``raw.<table>`` that records what each of its files covers (``Source.extent``)."""
    return f"{table}_extent"


def _text(value: object) -> str | None:
    """A parsed value as text, for DuckDB to cast to its column's type (null: blank, or a float's NaN)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value if isinstance(value, str) else str(value)


def write_extent(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[tuple[str, str]],
    files: Sequence[tuple[str, str, Sequence[Mapping[str, object]]]],
) -> None:
    """Insert into ``raw.<table>_extent`` the ``columns`` of every parsed row of each file (file, sha256, rows),
    valid or not, each value made its column's type where it can be and null where it cannot."""
    rows = [
        [source_file, sha, int(row["source_line"]), *(_text(row.get(name)) for name, _ in columns)]
        for source_file, sha, parsed_rows in files
        for row in parsed_rows
    ]
    if not rows:
        return
    names = [name for name, _ in columns]
    frame = pd.DataFrame(rows, columns=["extent_file", "extent_sha256", "extent_line", *names], dtype=object)
    typed = ", ".join(f"try_cast(cast({quote(n)} as varchar) as {t})" for n, t in columns)
    con.register("extent_rows", frame)
    con.execute(
        f"insert into {RAW}.{quote(extent_table(table))} select {typed}, extent_file, cast(extent_line as bigint), "
        "extent_sha256 from extent_rows"
    )
    con.unregister("extent_rows")


class FirstSeen:
    """Which file of one source first had each sha256, in the order files are offered (sorted paths).

    A file that could not be opened (``UNREAD_SHA256``) repeats nothing: its bytes are unknown."""

    def __init__(self) -> None:
        self._by_sha: dict[str, str] = {}

    def original_of(self, source_file: str, sha256: str) -> str | None:
        """The earlier file with the same bytes, or None (and remember this file) when it is the first."""
        if sha256 == UNREAD_SHA256:
            return None
        original = self._by_sha.setdefault(sha256, source_file)
        return None if original == source_file else original


def write_validated_source(
    con: duckdb.DuckDBPyConnection,
    schema: SourceSchema,
    landing_dir: Path,
    parsed_files: Sequence[tuple[ParsedFile, pd.DataFrame]],
    reused: Mapping[str, str] | None = None,
    within: Callable[[IngestReport], None] | None = None,
    extent: Sequence[str] = (),
    identities: Mapping[str, str] | None = None,
) -> IngestReport:
    """Replace ``raw.<schema.table>`` with the valid rows of every file, quarantine the rest, in one transaction.

    A file repeating the bytes of an earlier file in ``parsed_files`` adds neither rows nor quarantine lines;
    it is recorded as a duplicate of that file. A retracted file (these bytes under this name) is not loaded and
    has no ledger row; the same bytes under another name are quarantined whole (``retracted_content``); rows of
    files gone from the landing folder are kept (``begin_source``). The ``reused`` files (file -> sha256: present
    and not read tonight, ``reuse``) keep their rows, lines and ledger rows; none of them follows a file with its
    bytes (the caller read such a file instead), and a parsed file with the bytes of one is its duplicate.
    ``within`` runs inside the transaction, after the reused files are kept (it counts and remembers them).
    ``extent`` (``Source.extent``): columns of every parsed row of each file loaded, quarantined rows too, written to
    ``raw.<table>_extent`` (``write_extent``), whose rows of kept and reused files stay as raw's do.
    ``identities`` (file -> what its rows take from beside it, ``RowLoader.file_columns``): a file with the bytes of
    an earlier one is its duplicate only when this is the same too (a FOCUS part repeated by a later export run is
    that run's file, as the S3 Inventory's ``identity``).
    """
    report = IngestReport(schema.table)
    reused = reused or {}
    identities = identities or {}

    def identity(source_file: str, sha256: str) -> str:  # as source._keyed
        return f"{sha256} {identities[source_file]}" if source_file in identities else sha256

    seen = FirstSeen()
    for source_file, sha256 in reused.items():
        seen.original_of(source_file, identity(source_file, sha256))
    columns = [(c.name, c.sql_type) for c in schema.columns]
    select_list = ", ".join(f"cast({quote(n)} as {t})" for n, t in columns)
    present = {parsed.path.relative_to(landing_dir).as_posix(): parsed.sha256 for parsed, _ in parsed_files}
    kept = begin_source(con, schema.table, columns, {**present, **reused}, report, reused=list(reused))
    ledger = FileLedger(schema.table, report)
    extent_columns = [(name, dict(columns)[name]) for name in extent]
    if extent_columns:
        _replace_raw_table(con, extent_table(schema.table), extent_columns, kept, keep_all=False)
    try:
        if within is not None:
            within(report)
        retracted = retracted_files(con, schema.table)
        copies = retracted_contents(con, schema.table)
        loaded: list[pd.DataFrame] = []
        origins: list[tuple[str, str, int]] = []  # file, sha256, rows: of each frame in ``loaded``
        said: list[tuple[str, str, list[dict]]] = []  # file, sha256, every parsed row: of each file loaded
        for parsed, valid in parsed_files:
            source_file = parsed.path.relative_to(landing_dir).as_posix()
            if (source_file, parsed.sha256) in retracted:
                report.retracted.append(source_file)
                continue
            if parsed.sha256 in copies:
                records = max(1, parsed.rows_in)
                copied = [retracted_copy(copies[parsed.sha256], records)]
                ledger.file(source_file, parsed.sha256, records, 0, copied)
                continue
            original = seen.original_of(source_file, identity(source_file, parsed.sha256))
            if original is not None:
                ledger.duplicate(source_file, parsed.sha256, original)
                continue
            said.append((source_file, parsed.sha256, parsed.rows))
            if not valid.empty:
                loaded.append(valid)
                origins.append((source_file, parsed.sha256, len(valid)))
            ledger.file(source_file, parsed.sha256, parsed.rows_in, len(valid), parsed.rejections)
        ledger.write(con)
        if loaded:  # one insert for every file's rows (one per file cost ~5 ms a file), in file and line order
            incoming = pd.concat(loaded, ignore_index=True)
            counts = [rows for _, _, rows in origins]
            incoming["source_file"] = np.repeat([name for name, _, _ in origins], counts)
            incoming["file_sha256"] = np.repeat([sha for _, sha, _ in origins], counts)
            incoming["file_order"] = np.repeat(np.arange(len(origins)), counts)
            con.register("incoming_rows", incoming)
            con.execute(
                f"insert into {RAW}.{quote(schema.table)} select {select_list}, source_file, "
                "cast(source_line as bigint), file_sha256 from incoming_rows order by file_order, source_line"
            )
            con.unregister("incoming_rows")
        if extent_columns:
            write_extent(con, schema.table, extent_columns, said)
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return report


def record_failure(
    con: duckdb.DuckDBPyConnection, source: str, error: str, last_good_load: datetime | None
) -> datetime | None:
    """Record that ``source``'s load failed tonight (any transaction it left open is rolled back first), keeping the
    night of its last good load from an earlier failure; returns that night (None: it never loaded)."""
    with contextlib.suppress(duckdb.Error):  # DuckDB refuses a rollback when no transaction is open
        con.execute("rollback")
    earlier = con.execute("select last_good_load from raw.source_failures where source = ?", [source]).fetchall()
    if earlier:
        last_good_load = earlier[0][0]
    con.execute("delete from raw.source_failures where source = ?", [source])
    con.execute(
        "insert into raw.source_failures values (?, ?, ?, ?)",
        [source, error, datetime.now(UTC).replace(tzinfo=None), last_good_load],
    )
    return last_good_load


def clear_failure(con: duckdb.DuckDBPyConnection, source: str) -> None:
    """``source`` loaded: its figures are tonight's again."""
    con.execute("delete from raw.source_failures where source = ?", [source])


def kept_report(con: duckdb.DuckDBPyConnection, source: str) -> IngestReport:
    """What raw holds of ``source`` from earlier nights (the file ledger's counts), for a night its load failed."""
    report = IngestReport(source)
    [(files, rows_in, staged, quarantined, duplicates)] = con.execute(
        "select count(*), sum(rows_in), sum(rows_staged), sum(rows_quarantined), count(duplicate_of) "
        "from raw.ingested_files where source = ?",
        [source],
    ).fetchall()
    report.files, report.duplicate_files = int(files), int(duplicates)
    report.rows_in, report.rows_staged, report.rows_quarantined = (int(v or 0) for v in (rows_in, staged, quarantined))
    report.missing.extend(missing_files(con, source))
    return report
