"""Loading a large source inside DuckDB: each file into a temporary table, every value checked with SQL.

Device samples (``telemetry.py``) and S3 Inventory files (``storage.py``) are too large for the pandas
loader. Their rows never leave the database:

- a CSV file (plain or ``.gz``) is read as text into a temporary table; DuckDB's reject store catches structurally
  broken lines with their line numbers (``csv_structure``), and every kept row gets the line number it has in the
  file; a Parquet row is numbered from 1;
- the source turns what it read into ``landing_rows(line, ...)`` (``stage``); every value is then cast with
  ``try_cast`` (``typed_select``) and the first of the source's ordered rules a row breaks names its quarantine
  rule and message;
- a file whose bytes repeat an earlier file's of the same source is not read; a file that cannot be read at all
  is quarantined whole (line 0) with the rule of its ``FileRejected``, or ``file_format``, counting the records
  it held (its lines less the header; a Parquet file's rows, when its footer can be read);
- the raw table, the quarantine and the file ledger then change together in one transaction, so every file's
  ledger row is written with its rows, and rows in = staged + quarantined holds for each file;
- a file staged as a view (Parquet, ``stage_parquet``) is checked without its rows being kept: only the rows that
  break a rule are copied out, and its good rows are read from the file again inside that transaction, straight
  into raw (``_insert_read_again``). Holding every checked row of a night until the transaction spilled about
  500 bytes a sample to disk: at a 5,120-GPU cluster-day (442 M samples) more than the disk had (issue 15);
- consecutive small files a source can read alike (its ``group_key``) are staged by one read and checked by one
  insert (``stage_group``; each row names its file by ``landing_file``): a statement per file cost 17-40 ms a file
  on a landing folder of one-record files (issue 10). A group that cannot be read together is halved until its
  parts can, down to a file read alone by ``stage``, so a file's rows and rejections are the same either way.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar

import duckdb

from cost_pipeline.contract import Contract
from cost_pipeline.contract.schemas import Domain
from cost_pipeline.ingest.lib.parquet import parquet_rows
from cost_pipeline.ingest.lib.records import (
    UNREAD_SHA256,
    FileRejected,
    Rejection,
    count_records,
    file_sha256,
    naming_file,
    refusal,
    unopenable,
    whole_file,
)
from cost_pipeline.ingest.lib.reuse import (
    FileStat,
    LoadedFile,
    beside_sha256,
    count_reused,
    loader_sha256,
    remember_loaded,
    reusable_files,
)
from cost_pipeline.ingest.lib.warehouse import (
    FileLedger,
    FirstSeen,
    IngestReport,
    begin_source,
    file_pattern,
    quote,
    retracted_contents,
    retracted_copy,
    retracted_files,
)

if TYPE_CHECKING:
    from cost_pipeline.ingest.lib.source import Source

Rule = tuple[str, str, str]  # (rule, SQL condition that breaks it, message naming the column)
# The stage of one file: (connection, path, its empty lines) -> its structurally broken lines, after writing
# ``landing_rows(line, ...)``; raises ``FileRejected`` when the whole file is unusable.
Stage = Callable[[duckdb.DuckDBPyConnection, Path, list[int]], list[Rejection]]
# Several files staged by one statement: (connection, [(path, its empty lines)]) -> each file's structurally broken
# lines, after writing ``landing_rows(landing_file, line, ...)``, ``landing_file`` the file's position in the list.
StageGroup = Callable[[duckdb.DuckDBPyConnection, Sequence[tuple[Path, list[int]]]], list[list[Rejection]]]
# Which small files are staged together (issue 10: 10,000 one-record files, a statement each cost ~20 ms a file):
# consecutive files with the same ``group_key``, each under GROUP_FILE_BYTES, up to GROUP_FILES files and
# GROUP_BYTES bytes.
GROUP_FILE_BYTES = 1 << 20
GROUP_BYTES = 64 << 20
GROUP_FILES = 1000
_TEMPORARY = ("landing_text", "landing_rejects", "landing_scan")  # and landing_rows: drop_landing_rows
_FILE_NAME = "landing_file_name"  # the column a CSV's rows carry their file's name in


def file_position(files: int, name: str = "filename") -> str:
    """SQL for a row's file's position (``landing_file``) among ``files`` files read by one reader, from the column
    ``name`` holding its file's name; its one parameter is the list of the files' patterns (none for one file)."""
    return "0" if files == 1 else f"cast(list_position(?, {name}) - 1 as integer)"


def trimmed_sql(value: str) -> str:
    """SQL: ``trim(value)``, paid only by a value that may have something to trim.

    DuckDB's ``trim`` strips Unicode space separators (category Zs) from both ends, and copies every value it is
    given after walking it to its end: on request lines it was a fifth of the ingest (docs/benchmarks.md). The only
    such separator in ASCII is the space, so a value of ASCII characters (as many bytes as characters) that neither
    starts nor ends with one is already trimmed. Equal to ``trim`` on every code point
    (tests/test_in_database_text.py).
    """
    return (
        f"case when starts_with({value}, ' ') or ends_with({value}, ' ') or strlen({value}) <> length({value}) "
        f"then trim({value}) else {value} end"
    )


class ReadAlone(Exception):
    """A group stage's files cannot be staged together (a line only a per-file parser reads): read them one by one."""


@dataclass(frozen=True)
class InDatabaseSource:
    """What loads one source inside DuckDB: its raw columns, how a file is staged, how its rows are checked."""

    columns: Sequence[tuple[str, str]]  # raw column name and SQL type (the contract's, for this source)
    typed_select: str  # ``landing_rows`` -> the raw columns, each by try_cast
    rules: Sequence[Rule]
    stage: Stage
    # What besides its bytes tells two files apart, when the same bytes can hold another night's data (an S3
    # inventory of a bucket that did not change: its date is in the manifest or the file name, not in the file).
    identity: Callable[[Path], str] | None = None
    # The source as it loads one landing folder under one contract, for a source whose reading needs them (S3
    # Inventory: the default class, and its manifests opened through ``refusal`` inside the landing folder).
    bound: Callable[[InDatabaseSource, Contract, Path], InDatabaseSource] | None = None
    # A file's flag: what was assumed for it that the file did not say (None: nothing), logged and reported; read
    # on the load's connection (locked down to the landing folder), every night, for a reused file too.
    flag: Callable[[duckdb.DuckDBPyConnection, Path], str | None] | None = None
    # What a file's rows take from beside it, as text (an S3 inventory's manifest listing it, and the contract's
    # default class): remembered with the file (``reuse.beside_sha256``), which is read again when it changed. A
    # ``bound`` source puts in its loader's fingerprint (its rules) or here everything its reading is bound to.
    beside: Callable[[Path], str] | None = None
    parquet: bool = True  # whether its stage reads Parquet files (the metric-series formats are text and JSON)
    # The numeric columns' domains the rules were built from (``domain_rules``), for the docs.
    domains: Mapping[str, Domain] = dataclasses.field(default_factory=dict)
    # Small files staged together: ``stage_group`` reads the files ``group_key`` puts together (None: alone). A
    # group that fails is read again file by file, so a file gets the same rows and rejections either way.
    stage_group: StageGroup | None = None
    group_key: Callable[[Path], str | None] | None = None
    kind: ClassVar[str] = "in DuckDB"

    def reads_parquet(self) -> bool:
        return self.parquet

    def load(
        self, con: duckdb.DuckDBPyConnection, landing_dir: Path, source: Source, contract: Contract, _options: Any
    ) -> IngestReport:
        loader = self if self.bound is None else self.bound(self, contract, landing_dir)
        return load_in_database(con, landing_dir, source.files(landing_dir), source.name, loader)


def domain_rules(domains: Mapping[str, Domain], optional: Iterable[str] = ()) -> list[Rule]:
    """The rules of each numeric column from its declared domain (not finite, below, above: each named for what
    broke); an optional column may be blank."""
    blank_allowed = set(optional)
    return [
        (f"{column}.{rule}", condition, f"{column} should hold {domain.describe()}".replace("'", "''"))
        for column, domain in domains.items()
        for rule, condition in domain.sql_breaks(quote(column), column in blank_allowed)
    ]


def failed_rule_sql(rules: Sequence[Rule]) -> tuple[str, str]:
    """The first broken rule's name and its message, as two SQL CASE expressions (null: no rule broken)."""
    rule = "case " + " ".join(f"when {cond} then '{r}'" for r, cond, _ in rules) + " end"
    message = "case " + " ".join(f"when {cond} then '{m}'" for _, cond, m in rules) + " end"
    return rule, message


def columns_of(con: duckdb.DuckDBPyConnection, relation: str, params: list | None = None) -> dict[str, str]:
    """The columns of a table or query, by the names DuckDB gave them, with their types."""
    return {row[0]: row[1] for row in con.execute(f"describe {relation}", params or []).fetchall()}


_SCAN_CHUNK = 1 << 20
_BLANK_LINE = re.compile(rb"\n\r?(?=\n)")  # a line end, then an empty line (LF or CRLF) ending at the next \n


def _chunks(handle: BinaryIO) -> Iterator[bytes]:
    return iter(lambda: handle.read(_SCAN_CHUNK), b"")


def _blank_lines(chunks: Iterable[bytes]) -> list[int]:
    """The numbers of the empty lines after the first in a stream of bytes."""
    blanks: list[int] = []
    newlines = 0  # line ends in the chunks read so far
    tail = b""  # the previous chunk's last bytes: a blank line may straddle two chunks
    for chunk in chunks:
        window = tail + chunk
        counted, position = newlines - tail.count(b"\n"), 0  # line ends before window[position]
        for match in _BLANK_LINE.finditer(window):
            if match.end() < len(tail):
                continue  # found with the previous chunk
            counted += window.count(b"\n", position, match.start() + 1)
            position = match.start() + 1
            blanks.append(counted + 1)
        newlines += chunk.count(b"\n")
        tail = window[-2:]
    return blanks


def _hashed(handle: BinaryIO, digest: hashlib._Hash) -> Iterator[bytes]:
    for chunk in _chunks(handle):
        digest.update(chunk)
        yield chunk


def scan_csv(path: Path) -> tuple[str, list[int]]:
    """The file's sha256 and the numbers of its empty lines after the first, in one pass over its bytes.

    DuckDB's CSV reader skips an empty line without a trace but counts it in its line numbers, so the line
    number of every kept row after one depends on knowing where they are.
    """
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        blanks = _blank_lines(_hashed(handle, digest))
    return digest.hexdigest(), blanks


def is_gzip(path: Path) -> bool:
    return path.name.lower().endswith(".gz")


def scan_file(path: Path) -> tuple[str, list[int]]:
    """``scan_csv`` for any landing file: a Parquet file has no empty lines, a ``.gz`` file's are in its text.

    A ``.gz`` file that does not decompress is only hashed here; reading it (``first_line``) rejects it.
    """
    if path.suffix.lower() == ".parquet":
        return file_sha256(path), []
    if not is_gzip(path):
        return scan_csv(path)
    try:
        with gzip.open(path, "rb") as handle:
            blanks = _blank_lines(_chunks(handle))
    except (OSError, EOFError, zlib.error):
        blanks = []
    return file_sha256(path), blanks


def first_line(path: Path, limit: int = 1 << 16) -> str:
    """A cheap first look at a CSV file (plain or ``.gz``) before DuckDB reads it: its first line, as text."""
    try:
        with gzip.open(path, "rb") if is_gzip(path) else path.open("rb") as handle:
            line = handle.readline(limit)
    except (OSError, EOFError, zlib.error):
        raise FileRejected("file_compression", "file is not valid gzip") from None
    return line.decode("utf-8-sig", errors="replace").strip()


def stage_csv(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    select: Callable[[dict[str, str]], str],
    blank_lines: list[int],
    column_count: int | None = None,
    what: str = "row",
) -> list[Rejection]:
    """Read one CSV as text into ``landing_rows(landing_file, line, <select>)``; return its structurally broken
    lines (``stage_csv_files`` of one file)."""
    return stage_csv_files(con, [(path, blank_lines)], select, column_count, what)[0]


def stage_csv_files(
    con: duckdb.DuckDBPyConnection,
    files: Sequence[tuple[Path, list[int]]],
    select: Callable[[dict[str, str]], str],
    column_count: int | None = None,
    what: str = "row",
) -> list[list[Rejection]]:
    """Read CSV files (path, its empty lines), all with the same header, as text into one
    ``landing_rows(landing_file, line, <select>)``; return each file's structurally broken lines.

    With a header line the columns take its names; without one (``column_count``) they are ``c0``, ``c1``...
    ``select`` turns the columns read (name -> type) into the select list over ``landing_text``.
    Line numbers are DuckDB's: physical lines, except that a line end inside a quoted value does not count.
    An empty line is not a row (as in every CSV source) but keeps its number (the empty lines, from
    ``scan_csv``); the scan reads bytes, so an empty line inside a quoted value would shift later numbers.
    Several files are named by their paths as given (each one file: ``file_pattern`` leaves it as it is).
    """
    for table in ("landing_rejects", "landing_scan"):
        con.execute(f"drop table if exists {table}")
    header = column_count is None
    columns = "" if header else (", columns = {" + ", ".join(f"'c{i}': 'VARCHAR'" for i in range(column_count)) + "}")
    patterns = [file_pattern(path) for path, _ in files]
    one = len(files) == 1  # one file's rows need no column naming their file
    named = "" if one else f", filename = '{_FILE_NAME}'"
    con.execute(
        f"create or replace temp table landing_text as select * from read_csv(?, header = {str(header).lower()}, "
        "all_varchar = true, store_rejects = true, rejects_table = 'landing_rejects', "
        f"rejects_scan = 'landing_scan', auto_detect = true, skip = 0, delim = ',', quote = '\"'{named}{columns})",
        [patterns],
    )
    present = columns_of(con, "landing_text")
    present.pop(_FILE_NAME, None)
    selected = select(present)
    first = 2 if header else 1  # the line number of the first data line

    names = [] if one else [patterns]  # the parameter of each ``file_position``

    # A kept row's line number: its position among its file's kept rows, plus the lines before the first data
    # line, plus the lines before it that hold no kept row (broken lines and empty ones). Adjacent skipped lines
    # share ``kept_before``; the last wins.
    kept_position = "rowid" if one else f"row_number() over (partition by {_FILE_NAME} order by rowid) - 1"
    blanks = [(index, line) for index, (_, lines) in enumerate(files) for line in lines]
    con.execute(
        f"""
        create or replace temp table landing_rows as
        with skipped as (
            select landing_file, line,
                   row_number() over (partition by landing_file order by line) as skipped_so_far
            from (
                select {file_position(len(files), "landing_scan.file_path")} as landing_file, landing_rejects.line
                from landing_rejects inner join landing_scan using (scan_id, file_id)
                union
                select unnest(?::integer[]), unnest(?::bigint[])
            )
            where line >= {first}
        ), gaps as (
            select landing_file, cast(line - {first} - (skipped_so_far - 1) as bigint) as kept_before,
                   max(skipped_so_far) as skipped_so_far
            from skipped group by all
        ), kept as (
            select {file_position(len(files), _FILE_NAME)} as landing_file, {kept_position} as landing_position,
                   {selected}
            from landing_text
        )
        select kept.landing_file,
               cast(kept.landing_position + {first} + coalesce(gaps.skipped_so_far, 0) as bigint) as line,
               kept.* exclude (landing_file, landing_position)
        from kept asof left join gaps
            on kept.landing_file = gaps.landing_file and kept.landing_position >= gaps.kept_before
    """,
        [*names, [i for i, _ in blanks], [line for _, line in blanks], *names],
    )
    rows = con.execute(
        f"""
        select {file_position(len(files), "landing_scan.file_path")} as landing_file, landing_rejects.line,
               string_agg(distinct cast(landing_rejects.error_type as varchar), ', ') as kinds
        from landing_rejects inner join landing_scan using (scan_id, file_id)
        group by all order by all
    """,
        names,
    ).fetchall()
    broken: list[list[Rejection]] = [[] for _ in files]
    for landing_file, line, kinds in rows:
        broken[landing_file].append(
            Rejection(int(line), "csv_structure", f"line is not a well-formed {what} row ({kinds})")
        )
    return broken


def stage_parquet(con: duckdb.DuckDBPyConnection, path: Path, select: Callable[[dict[str, str]], str]) -> None:
    """``landing_rows(line, <select>)`` over one Parquet file, its rows numbered from 1: a view, so the file is read
    once, by the check that copies its rows into ``checked_rows``, not first copied whole into a table of its own (at
    100 M samples that copy spilled to disk, and was held until every file was loaded)."""
    selected = select(columns_of(con, "select * from read_parquet(?)", [file_pattern(path)]))
    drop_landing_rows(con)
    name = "'" + file_pattern(path).replace("'", "''") + "'"  # a view takes no parameters
    con.execute(
        f"create temp view landing_rows as select cast(file_row_number + 1 as bigint) as line, "
        f"{selected} from read_parquet({name}, file_row_number = true)"
    )


def drop_landing_rows(con: duckdb.DuckDBPyConnection) -> None:
    """Drop ``landing_rows``, a table (most stages) or a view (``stage_parquet``)."""
    con.execute(f"drop {'view' if _staged_as_view(con) else 'table'} if exists landing_rows")


def load_in_database(
    con: duckdb.DuckDBPyConnection, landing_dir: Path, paths: Sequence[Path], name: str, source: InDatabaseSource
) -> IngestReport:
    """Replace ``raw.<name>`` from ``paths``, quarantining what breaks the source's rules.

    Files are read and checked into connection-local temporary tables first, so an unreadable file costs
    only itself; the raw table, quarantine and file ledger then change together in one short transaction.
    """
    report = IngestReport(name)
    failed_rule, failed_message = failed_rule_sql(source.rules)
    typed = ", ".join(f"{quote(n)} {t}" for n, t in source.columns)
    con.execute(
        f"create or replace temp table checked_rows (source_file varchar, file_sha256 varchar, line bigint, "
        f"{typed}, failed_rule varchar, failed_message varchar)"
    )
    checked = checked_select(source, failed_rule, failed_message)
    checked_together = checked_select(source, failed_rule, failed_message, together=True)
    files: list[tuple[str, str, list[Rejection]]] = []
    to_read: list[_ToRead] = []  # the files whose rows are read tonight, in name order
    read_again: dict[str, ReadAgain] = {}  # files whose good rows are read again in the transaction
    keys: dict[str, str] = {}  # each file's bytes, and for a source with ``identity`` what else tells it apart
    loader = loader_sha256(name, source)
    reusable = reusable_files(con, name, source.columns)
    reused: list[str] = []  # present files whose rows raw holds as this loader wrote them: not read again
    hashed: dict[str, LoadedFile] = {}  # each file's sha256 tonight, its stat before it was read, and its loader
    duplicate_of: dict[str, str] = {}
    # A file holding a retracted file's bytes under another name: read and counted, then quarantined whole. Not
    # for a source whose same bytes may be another night's data (``identity``): for it they are not a copy.
    copy_of: dict[str, str] = {}
    copies = retracted_contents(con, name) if source.identity is None else {}
    retracted = retracted_files(con, name)
    seen = FirstSeen()
    for path in paths:
        source_file = path.relative_to(landing_dir).as_posix()
        with naming_file(source_file):  # an unforeseen error fails the load, naming the file
            reason = refusal(path, landing_dir)
            if reason is not None:  # never handed to DuckDB: quarantined whole with its reason
                files.append((source_file, UNREAD_SHA256, [unopenable(reason)]))
                continue
            stat = FileStat.of(path)
            file_loader = loader if source.beside is None else beside_sha256(loader, source.beside(path))
            known = reusable.get(source_file)
            if known is not None and known.loader != file_loader:  # read by another loader, or with other values
                known = None
            if known is None:
                sha, blank_lines = scan_file(path)
            else:  # the ledger's sha256 while the stat is the same; else hashed, and read if the bytes changed
                sha, blank_lines = known.sha256 if known.stat == stat else file_sha256(path), None
            hashed[source_file] = LoadedFile(sha, stat.settled(), file_loader)  # settled again once read (below)
            identity = sha if source.identity is None else f"{sha} {source.identity(path)}"
            keys[source_file] = identity
            if sha in copies and (source_file, sha) not in retracted:
                copy_of[source_file] = copies[sha]
            original = None if source_file in copy_of else seen.original_of(source_file, identity)
            if original is None and known is not None and known.sha256 == sha and source_file not in copy_of:
                reused.append(source_file)
                _flag(con, source, path, source_file, report)
                continue
            if original is not None:  # same bytes (and identity) as an earlier file: not read, a duplicate
                duplicate_of[source_file] = original
                files.append((source_file, sha, []))
                continue
            if blank_lines is None:
                blank_lines = scan_file(path)[1]
            to_read.append(_ToRead(len(files), path, source_file, sha, stat, blank_lines))
            files.append((source_file, sha, []))  # its rejections once it is read
    for group in _groups(source, to_read):
        for item, together in _together_or_alone(con, source, group, checked_together):
            if together is not None:
                broken, read = together, True
            else:
                with naming_file(item.source_file):  # an unforeseen error fails the load, naming the file
                    broken, read = _read_one(con, source, item, checked, read_again)
            files[item.position] = (item.source_file, item.sha256, broken)
            if read:
                hashed[item.source_file] = dataclasses.replace(hashed[item.source_file], stat=item.stat.settled())
                _flag(con, source, item.path, item.source_file, report)
    drop_landing_rows(con)
    for table in _TEMPORARY:
        con.execute(f"drop table if exists {table}")
    try:
        key_of = None if source.identity is None else partial(_gone_file_key, source, landing_dir)
        _write_checked(
            con, name, source, files, reused, hashed, keys, key_of, duplicate_of, copy_of, report, read_again
        )
    finally:
        con.execute("drop table if exists checked_rows")
    return report


@dataclass(frozen=True)
class _ToRead:
    """A file whose rows are read tonight: its place among the night's files, and what its scan found."""

    position: int
    path: Path
    source_file: str
    sha256: str
    stat: FileStat  # before it was read
    blank_lines: list[int]


def _groups(source: InDatabaseSource, files: Sequence[_ToRead]) -> Iterator[list[_ToRead]]:
    """``files`` in order, in runs staged together: consecutive small files with the same ``group_key``."""
    group: list[_ToRead] = []
    key: str | None = None
    size = 0
    for item in files:
        item_key = _group_key(source, item)
        fits = item_key is not None and item_key == key and len(group) < GROUP_FILES
        if group and not (fits and size + item.stat.size <= GROUP_BYTES):
            yield group
            group, size = [], 0
        group.append(item)
        key, size = item_key, size + item.stat.size
    if group:
        yield group


def _group_key(source: InDatabaseSource, item: _ToRead) -> str | None:
    """What a file is staged together with (None: it is read alone). A name the readers would expand as a
    pattern (``file_pattern``) is read alone: several files are named to them as given."""
    if source.stage_group is None or source.group_key is None or item.stat.size > GROUP_FILE_BYTES:
        return None
    return source.group_key(item.path) if file_pattern(item.path) == str(item.path) else None


def _together_or_alone(
    con: duckdb.DuckDBPyConnection, source: InDatabaseSource, group: Sequence[_ToRead], checked: str
) -> Iterator[tuple[_ToRead, list[Rejection] | None]]:
    """Each file of ``group``, in order, with its structurally broken lines once read together with others, or
    None: to be read alone. A group that cannot be read together is halved until its parts can, so that a file
    that must be read alone costs its group a few more reads, not a read per file."""
    if len(group) == 1:
        yield group[0], None
        return
    broken = _read_together(con, source, group, checked)
    if broken is not None:
        yield from zip(group, broken, strict=True)
        return
    half = len(group) // 2
    yield from _together_or_alone(con, source, group[:half], checked)
    yield from _together_or_alone(con, source, group[half:], checked)


def _read_together(
    con: duckdb.DuckDBPyConnection, source: InDatabaseSource, group: Sequence[_ToRead], checked: str
) -> list[list[Rejection]] | None:
    """Stage and check ``group``'s files by one statement each into ``checked_rows``; each file's structurally
    broken lines, or None when the group could not be read together (nothing is kept: read them one by one)."""
    assert source.stage_group is not None
    try:
        broken = source.stage_group(con, [(item.path, item.blank_lines) for item in group])
        con.execute(
            "create or replace temp table landing_files as select unnest(?::integer[]) as landing_file, "
            "unnest(?::varchar[]) as source_file, unnest(?::varchar[]) as file_sha256",
            [list(range(len(group))), [item.source_file for item in group], [item.sha256 for item in group]],
        )
        con.execute(f"insert into checked_rows {checked}")
    except (FileRejected, ReadAlone, duckdb.Error):
        return None
    finally:
        drop_landing_rows(con)
        con.execute("drop table if exists landing_files")
    return broken


def _read_one(
    con: duckdb.DuckDBPyConnection,
    source: InDatabaseSource,
    item: _ToRead,
    checked: str,
    read_again: dict[str, ReadAgain],
) -> tuple[list[Rejection], bool]:
    """Stage and check one file into ``checked_rows``: its structurally broken lines and True, or (it could not
    be read) its quarantine whole, counting the records it held, and False."""
    try:
        broken = source.stage(con, item.path, item.blank_lines)
        if _staged_as_view(con):  # only its broken rows are kept now; its good rows are read again
            [(failed,)] = con.execute(
                f"insert into checked_rows select * from ({checked}) where failed_rule is not null",
                [item.source_file, item.sha256],
            ).fetchall()
            [(rows,)] = con.execute("select count(*) from landing_rows").fetchall()
            read_again[item.source_file] = ReadAgain(item.path, item.sha256, item.stat, rows - failed)
        else:
            # One statement: a file's rows are all checked in, or (it fails) none are and it is quarantined.
            con.execute(f"insert into checked_rows {checked}", [item.source_file, item.sha256])
        drop_landing_rows(con)  # not held beside checked_rows while the other files load
        return broken, True
    except (FileRejected, duckdb.Error) as error:
        drop_landing_rows(con)  # what the file's stage left, a table or a view: the next stage writes its own
        rule, message = (
            (error.rule, str(error).splitlines()[0])
            if isinstance(error, FileRejected)
            else ("file_format", "file is not readable")
        )
        path = item.path
        records = (
            (parquet_rows(path) or 1)
            if path.suffix.lower() == ".parquet"
            else count_records(path, error.header_lines if isinstance(error, FileRejected) else 1)
        )
        return [whole_file(rule, message, records)], False


@dataclass(frozen=True)
class ReadAgain:
    """A file checked without its rows being kept: its good rows are read from it again in the transaction."""

    path: Path
    sha256: str
    stat: FileStat  # the file's stat when it was checked: read again only if it is unchanged
    staged: int  # its good rows when it was checked


def checked_select(source: InDatabaseSource, failed_rule: str, failed_message: str, together: bool = False) -> str:
    """``landing_rows`` checked, as ``checked_rows``' columns: the file's name and sha256 are its two parameters,
    or (``together``: several files staged at once) each row's from ``landing_files`` by its ``landing_file``."""
    names = ", ".join(["source_file", "file_sha256", "line", *(quote(n) for n, _ in source.columns)])
    file, rows = (
        (
            "landing_files.source_file, landing_files.file_sha256",
            "landing_rows inner join landing_files using (landing_file)",
        )
        if together
        else ("?, ?", "landing_rows")
    )
    return (
        f"select * from (select {file}, line, {source.typed_select}, {failed_rule}, {failed_message} "
        f"from {rows}) as checked({names}, failed_rule, failed_message)"
    )


def _staged_as_view(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the file's stage left ``landing_rows`` as a view over the file (Parquet), not a table of its rows."""
    [(views,)] = con.execute(
        "select count(*) from duckdb_views() where temporary and view_name = 'landing_rows'"
    ).fetchall()
    return views > 0


def _insert_read_again(
    con: duckdb.DuckDBPyConnection, name: str, source: InDatabaseSource, source_file: str, again: ReadAgain
) -> None:
    """A checked file's good rows, read from it again, into ``raw.<name>``: every line but those its check copied
    out (the rules are not evaluated again); raises if the file changed since."""
    if FileStat.of(again.path) != again.stat:
        raise RuntimeError(f"{source_file} changed while it was loaded; the next night loads it again")
    source.stage(con, again.path, [])
    columns = ", ".join(quote(n) for n, _ in source.columns)
    [(inserted,)] = con.execute(
        f"insert into raw.{quote(name)} select {columns}, source_file, line, file_sha256 "
        f"from ({checked_select(source, 'null', 'null')}) where line not in "
        "(select line from checked_rows where source_file = ? and file_sha256 = ?)",
        [source_file, again.sha256, source_file, again.sha256],
    ).fetchall()
    drop_landing_rows(con)
    if inserted != again.staged:
        raise RuntimeError(
            f"{source_file} changed while it was loaded: {again.staged} good rows when checked, {inserted} read again"
        )


def _flag(
    con: duckdb.DuckDBPyConnection, source: InDatabaseSource, path: Path, source_file: str, report: IngestReport
) -> None:
    flagged = None if source.flag is None else source.flag(con, path)
    if flagged is not None:
        report.flags.append(f"{source_file}: {flagged}")


def _gone_file_key(source: InDatabaseSource, landing_dir: Path, source_file: str, sha256: str) -> str:
    """A file gone from the landing folder, keyed as a present file is (its bytes and identity): it moved only if a
    present file has the same key. Its identity read from its name (a scrape's time); when that cannot be had (an
    inventory whose manifest went with it), a key no present file has: its rows are kept."""
    assert source.identity is not None
    try:
        return f"{sha256} {source.identity(landing_dir / source_file)}"
    except (OSError, ValueError, FileRejected):
        return f"{sha256} gone {source_file}"


def _write_checked(
    con: duckdb.DuckDBPyConnection,
    name: str,
    source: InDatabaseSource,
    files: list[tuple[str, str, list[Rejection]]],
    reused: list[str],
    hashed: dict[str, LoadedFile],
    keys: dict[str, str],
    key_of: Callable[[str, str], str] | None,
    duplicate_of: dict[str, str],
    copy_of: dict[str, str],
    report: IngestReport,
    read_again: dict[str, ReadAgain],
) -> None:
    """``checked_rows`` and each file's whole-file and structural rejections -> raw table, quarantine, ledger; a
    copy of a retracted file (``copy_of``: file -> the retraction) quarantined whole with every record it held;
    the ``reused`` files kept as they are; every file hashed tonight remembered (``reuse``), all in one
    transaction."""
    columns = ", ".join(quote(n) for n, _ in source.columns)
    present = {**{f: keys.get(f, sha) for f, sha, _ in files}, **{f: keys[f] for f in reused}}
    begin_source(con, name, source.columns, present, report, reused=reused, key_of=key_of)
    try:
        count_reused(con, name, reused, report)
        remember_loaded(con, name, hashed)
        retracted = retracted_files(con, name)
        report.retracted.extend(f for f, sha, _ in files if (f, sha) in retracted)
        files = [entry for entry in files if (entry[0], entry[1]) not in retracted]
        read_again = {f: again for f, again in read_again.items() if (f, again.sha256) not in retracted}
        if retracted:
            con.executemany(
                "delete from checked_rows where source_file = ? and file_sha256 = ?", [list(r) for r in retracted]
            )
        copied_rows: dict[str, int] = {}
        if copy_of:
            copied_rows = dict(
                con.execute(
                    "select source_file, count(*) from checked_rows where list_contains(?, source_file) group by 1",
                    [list(copy_of)],
                ).fetchall()
            )
            for copied in copy_of:
                if copied in read_again:
                    copied_rows[copied] = copied_rows.get(copied, 0) + read_again.pop(copied).staged
            con.execute("delete from checked_rows where list_contains(?, source_file)", [list(copy_of)])
        # Not sorted: the files were checked in one by one in name order, each in line order, and DuckDB keeps
        # insertion order; no figure depends on raw's order (models order by file and line where it matters).
        # Sorting every row again was two thirds of the telemetry ingest (issue 15).
        con.execute(
            f"insert into raw.{quote(name)} select {columns}, source_file, line, file_sha256 "
            "from checked_rows where failed_rule is null"
        )
        for source_file, again in read_again.items():
            _insert_read_again(con, name, source, source_file, again)
        con.execute(
            "insert into raw.quarantine select ?, source_file, file_sha256, line, failed_rule, "
            "failed_message, null from checked_rows where failed_rule is not null",
            [name],
        )
        counts = {
            f: (staged, failed)
            for f, staged, failed in con.execute(
                "select source_file, count(*) filter (where failed_rule is null), "
                "count(*) filter (where failed_rule is not null) from checked_rows group by source_file"
            ).fetchall()
        }
        examples = con.execute(
            "select source_file, line, failed_rule, failed_message from checked_rows where failed_rule is not null "
            "order by source_file, line limit 20"
        ).fetchall()
        by_rule = con.execute(
            "select failed_rule, count(*) from checked_rows where failed_rule is not null group by failed_rule"
        ).fetchall()
        ledger = FileLedger(name, report)
        for source_file, sha, rejections in files:
            if source_file in copy_of:
                records = max(1, copied_rows.get(source_file, 0) + sum(r.records for r in rejections))
                ledger.file(source_file, sha, records, 0, [retracted_copy(copy_of[source_file], records)])
                continue
            if source_file in duplicate_of:
                ledger.duplicate(source_file, sha, duplicate_of[source_file])
                continue
            staged, failed = counts.get(source_file, (0, 0))
            staged += read_again[source_file].staged if source_file in read_again else 0
            rows_in = staged + failed + sum(r.records for r in rejections)
            ledger.file(source_file, sha, rows_in, staged, rejections, checked_in_database=failed)
        ledger.write(con)
        report.by_rule.update(dict(by_rule))
        report.rows_quarantined += sum(failed for _, failed in counts.values())
        report.examples.extend(Rejection(line, rule, message).describe(f) for f, line, rule, message in examples)
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
