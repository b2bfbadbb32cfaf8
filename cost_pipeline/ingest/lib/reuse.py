"""Which landing files a source need not read again: those whose rows raw holds as the same loader wrote them.

Every source keeps, in ``ops.loaded_files``, each file it loaded tonight: its sha256, what ``os.stat`` said of it
before its bytes were read, and the loader's fingerprint (``loader_sha256`` for the sources loaded inside DuckDB,
``in_database``; ``row_loader_sha256`` for those read in Python, ``source.RowLoader``, whose launch options it
covers too). A file whose rows depend on what is read beside it is remembered with the loader's fingerprint folded
with that (``beside_sha256``, from ``InDatabaseSource.beside``): an S3 inventory's data file with the manifest
listing it (its fileSchema, fileFormat and creationTimestamp; or none, its date and columns then from its name and
header line; or why a manifest rejects it) and the contract's default storage class. The next night a file still
in the ledger under the same name and bytes, loaded by the same loader with the same values beside it, keeps its
raw rows, quarantined lines and ledger row; it is not read. It is not even hashed while ``os.stat`` says what it
said: size, modification and change times (the change time cannot be set back by ``touch`` or ``utime``), inode
and device (a link pointed at another file). A stat taken within ``RACY_NS`` of the file's last change is not
trusted (as git treats "racily clean" files): the next night hashes the file.

Never reused: a file refused whole (its refusal may have been the machine's, out of memory, say: it is read again),
a file with rows held after a dbt test (``cost_pipeline.dbt_failures``: read again, they are held again only if they
still fail, so a fix in dbt releases them), a file with a row quarantined for a time after the night
(``night_clock``: the clock moves on, and read again the row is judged by tonight's clock),
a duplicate, a retracted file, and any file when the raw table's columns are not the contract's.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from cost_pipeline.contract import Contract, contract_files_sha256
from cost_pipeline.ingest.lib.records import UNREAD_SHA256, Rejection
from cost_pipeline.ingest.lib.warehouse import (
    HELD_RULE,
    IngestReport,
    contract_columns,
    insert_rows,
    raw_columns,
    retracted_files,
)
from cost_pipeline.night_clock import AFTER_NIGHT

if TYPE_CHECKING:
    from cost_pipeline.ingest.lib.in_database import InDatabaseSource

RACY_NS = 2 * 10**9  # coarse file-system clocks tick in up to 2 s

_LOADED_COLUMNS = (
    "source",
    "source_file",
    "file_sha256",
    "file_size",
    "modified_ns",
    "changed_ns",
    "inode",
    "device",
    "loader_sha256",
)
_LOADED_DDL = """
create table if not exists ops.loaded_files (
    source varchar not null,
    source_file varchar not null,
    file_sha256 varchar not null,
    file_size bigint not null,
    modified_ns bigint not null,
    changed_ns bigint not null,
    inode ubigint not null,
    device ubigint not null,
    loader_sha256 varchar not null
)"""


def _code_sha256() -> bytes:
    """The code that reads and checks a file (``cost_pipeline/ingest``, the contract's and the night's clock's), as
    this process imported it."""
    package = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    code = [*(package / "ingest").rglob("*.py"), *(package / "contract").glob("*.py"), package / "night_clock.py"]
    for path in sorted(code):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    for library in ("duckdb", "pandas", "pandera", "numpy"):  # how a CSV is sniffed, a value cast, a row coerced
        digest.update(f"{library}=={version(library)}".encode())
    digest.update(f"python {sys.version_info[:2]}".encode())  # how Python's csv, json and datetime read a value
    return digest.digest()


_CODE_SHA256 = _code_sha256()


def _fingerprint(described: tuple) -> str:
    digest = hashlib.sha256(repr(described).encode())
    digest.update(_CODE_SHA256)
    digest.update(contract_files_sha256().encode())
    return digest.hexdigest()


def loader_sha256(name: str, source: InDatabaseSource) -> str:
    """What a file's loaded rows depend on besides its bytes: the source's name, raw columns, typed select and rules,
    the code and libraries that read and check it, and every contract version's file."""
    return _fingerprint((name, list(source.columns), source.typed_select, list(source.rules)))


def beside_sha256(loader: str, beside: str) -> str:
    """The fingerprint of ``loader`` reading one file with what it reads ``beside`` the file (an S3 inventory's
    manifest listing it, the contract's default class): the file is read again when either changed."""
    return hashlib.sha256(f"{loader}\0{beside}".encode()).hexdigest()


def row_loader_sha256(name: str, columns: Sequence[tuple[str, str]], options: object, contract: Contract) -> str:
    """The same for a source read in Python (``source.RowLoader``): its name, raw columns and launch options (a
    frozen dataclass, or None), the contract its checks were built from (the one in hand, whatever the files say
    now), the code and libraries that parse and check it, and every contract version's file."""
    document = json.dumps(contract.document, sort_keys=True, default=str)
    return _fingerprint((name, list(columns), repr(options), contract.version, document))


@dataclass(frozen=True)
class FileStat:
    """What ``os.stat`` says of a landing file (its target, for a link), taken before its bytes are read."""

    size: int
    modified_ns: int
    changed_ns: int
    inode: int
    device: int

    @classmethod
    def of(cls, path: Path) -> FileStat:
        stat = os.stat(path)
        return cls(stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev)

    def settled(self, now_ns: int | None = None) -> FileStat:
        """This stat, or one that matches no later stat when the file's bytes were read (``now_ns``, by default
        now: call it right after reading them) too soon after the file last changed: a change in the same tick of a
        coarse clock would leave the same stat and other bytes."""
        now_ns = time.time_ns() if now_ns is None else now_ns
        racy = now_ns - max(self.modified_ns, self.changed_ns) < RACY_NS
        return replace(self, changed_ns=-1) if racy else self


@dataclass(frozen=True)
class LoadedFile:
    """A file as a loader read it (a row of ``ops.loaded_files``): its sha256, its stat before its bytes were read,
    and the fingerprint of the loader that read it (``loader_sha256``, ``row_loader_sha256`` or, for a file read
    with what is beside it, ``beside_sha256``)."""

    sha256: str
    stat: FileStat
    loader: str


def _create_loaded_files(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("create schema if not exists ops")
    con.execute(_LOADED_DDL)


def reusable_files(
    con: duckdb.DuckDBPyConnection, name: str, columns: Sequence[tuple[str, str]]
) -> dict[str, LoadedFile]:
    """file -> what it was when loaded, for every file of the source that may be reused tonight, loaded into a raw
    table whose ``columns`` are still the contract's; reused only by a loader whose fingerprint is its ``loader``."""
    _create_loaded_files(con)
    if raw_columns(con, name) != contract_columns(con, columns):
        return {}
    retracted = retracted_files(con, name)
    rows = con.execute(
        "select f.source_file, f.file_sha256, l.loader_sha256, l.file_size, l.modified_ns, l.changed_ns, l.inode, "
        "l.device from raw.ingested_files as f inner join ops.loaded_files as l "
        "using (source, source_file, file_sha256) "
        "where f.source = ? and f.duplicate_of is null and not f.refused_whole and f.file_sha256 <> ? "
        "and not exists (select 1 from raw.quarantine as q "
        "where q.source = f.source and q.source_file = f.source_file "
        "and (starts_with(q.rule, ?) or ends_with(q.rule, ?)))",
        [name, UNREAD_SHA256, HELD_RULE, f".{AFTER_NIGHT}"],
    ).fetchall()
    return {f: LoadedFile(sha, FileStat(*stat), loader) for f, sha, loader, *stat in rows if (f, sha) not in retracted}


def remember_loaded(con: duckdb.DuckDBPyConnection, name: str, loaded: dict[str, LoadedFile]) -> None:
    """Replace the source's rows of ``ops.loaded_files`` (created by ``reusable_files``) with tonight's files (file ->
    its sha256, its stat ``settled`` when its bytes had been read, the loader that read it), in the caller's
    transaction: they change with raw or not at all."""
    rows = [
        [name, f, file.sha256, *vars(file.stat).values(), file.loader]
        for f, file in loaded.items()
        if file.sha256 != UNREAD_SHA256
    ]
    con.execute("delete from ops.loaded_files where source = ?", [name])
    insert_rows(con, "ops.loaded_files", _LOADED_COLUMNS, rows)


def count_reused(con: duckdb.DuckDBPyConnection, name: str, reused: Sequence[str], report: IngestReport) -> None:
    """Add the reused files to tonight's report from their ledger rows and quarantined lines."""
    if not reused:
        return
    reused = list(reused)
    chosen = "source_file in (select unnest(?::varchar[]))"
    for rows_in, staged, quarantined in con.execute(
        f"select rows_in, rows_staged, rows_quarantined from raw.ingested_files where source = ? and {chosen}",
        [name, reused],
    ).fetchall():
        report.files += 1
        report.rows_in += rows_in
        report.rows_staged += staged
        report.rows_quarantined += quarantined
    report.by_rule.update(
        dict(
            con.execute(
                f"select rule, count(*) from raw.quarantine where source = ? and {chosen} group by rule",
                [name, reused],
            ).fetchall()
        )
    )
    room = max(0, 20 - len(report.examples))
    examples = con.execute(
        f"select source_file, line, rule, message from raw.quarantine where source = ? and {chosen} "
        "order by source_file, line limit ?",
        [name, reused, room],
    ).fetchall()
    report.examples.extend(Rejection(line, rule, message).describe(f) for f, line, rule, message in examples)
