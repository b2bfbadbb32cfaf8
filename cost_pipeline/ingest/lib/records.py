"""Reading landing files into rows with their line numbers, and the quarantine record.

Every data line of a file ends up either as a row (carrying ``source_line``) or as a ``Rejection``;
``ParsedFile.rows_in`` counts the lines so the conservation rows in = staged + quarantined can be checked. A file
refused whole is one line-0 rejection standing for every record the file held (``Rejection.records``).
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import hashlib
import io
import json
import re
import stat
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

# A CSV value may be as long as the format allows (a FOCUS ``Tags`` object past the csv module's default 128 KiB
# field limit): the limit is the largest the platform's C long holds.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1) if sys.platform == "win32" else sys.maxsize)


@dataclass(frozen=True)
class Rejection:
    """One quarantined line: where it was, which contract rule it broke, and why (no field values)."""

    line: int
    rule: str
    message: str
    raw: str | None = None
    # The records this rejection stands for: 1 for a line, all the file held for a file refused whole (line 0).
    records: int = 1

    def describe(self, source_file: str) -> str:
        return f"{source_file}, line {self.line}: rule {self.rule}: {self.message}"


@dataclass
class ParsedFile:
    path: Path
    sha256: str
    rows_in: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    # The decoded text with its line ends as written, while the line parser runs (a CSV value may hold one).
    text: str | None = None


class FileRejected(Exception):
    """The whole file is unusable (not text, wrong header); it is quarantined as one line-0 rejection that
    counts the records the file held (``header_lines``: the lines before its first record)."""

    def __init__(self, rule: str, message: str, header_lines: int = 1) -> None:
        super().__init__(message)
        self.rule = rule
        self.header_lines = header_lines


class RowRejected(ValueError):
    """One row breaks a rule while it is mapped into its raw shape; it is quarantined, the file goes on."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule


class FileLoadFailed(Exception):
    """Reading one file raised what no rule foresaw: the source's load fails (raw kept as it was), naming the file."""

    def __init__(self, source_file: str, error: Exception) -> None:
        super().__init__(f"{source_file}: {one_line(error)}")


def one_line(error: Exception) -> str:
    """An error as one line: its type and the first line of its message (``FileLoadFailed``: as it is)."""
    first = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    if isinstance(error, FileLoadFailed):
        return first
    return f"{type(error).__name__}" + (f": {first}" if first else "")


@contextlib.contextmanager
def naming_file(source_file: str) -> Iterator[None]:
    """An unforeseen error while reading ``source_file`` becomes ``FileLoadFailed`` naming it."""
    try:
        yield
    except FileLoadFailed:
        raise
    except Exception as error:
        raise FileLoadFailed(source_file, error) from error


def landing_files(landing_dir: Path, folder: str, patterns: Iterable[str], exclude: Iterable[str] = ()) -> list[Path]:
    """The entries of one source in sorted order: those under ``folder`` matching a pattern, less excluded names.

    Every entry a pattern matches is listed, a directory, a FIFO or a link too: a source passes each through
    ``refusal`` before anything reads it, so one that cannot be opened is quarantined whole, never skipped unsaid.
    """
    excluded = tuple(exclude)
    found = {
        p
        for pattern in patterns
        for p in (landing_dir / folder).glob(pattern)
        if not any(fnmatch(p.name, x) for x in excluded)
    }
    return sorted(found)


UNOPENABLE = "file_unopenable"
UNREAD_SHA256 = "unread"  # the ledger's file_sha256 of a file that could not be opened


def refusal(path: Path, landing_dir: Path) -> str | None:
    """Why ``path`` cannot be read as a landing file ("is a directory ..."; None: it can), before any source opens it.

    The one gate every source (read in Python or by DuckDB) passes a file through: a link that points outside the
    landing folder, a directory, FIFO, socket or device where a file should be, a file that cannot be opened for
    reading. A FIFO is never opened (that would wait for a writer).
    """
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return "is a link that points nowhere (or in a loop)"
    if not resolved.is_relative_to(landing_dir.resolve()):
        return "is a link that points outside the landing folder"
    try:
        mode = resolved.stat().st_mode
    except OSError as error:
        return f"cannot be read ({error.strerror or 'no access'})"
    if stat.S_ISDIR(mode):
        return "is a directory where a file should be"
    if not stat.S_ISREG(mode):
        return "is not a regular file (a FIFO, socket or device)"
    try:
        with resolved.open("rb"):
            pass
    except OSError as error:
        return f"cannot be opened ({error.strerror or 'no access'})"
    return None


def unopenable(reason: str) -> Rejection:
    """The line-0 rejection of a file that could not be opened: nothing in it was read."""
    return whole_file(UNOPENABLE, f"file {reason}", 1)


def refused_file(path: Path, reason: str) -> ParsedFile:
    """A file that could not be opened (``refusal``), quarantined whole as one record; its bytes are never read."""
    return ParsedFile(path=path, sha256=UNREAD_SHA256, rows_in=1, rejections=[unopenable(reason)])


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# Line ends are \n, \r\n and \r only. ``str.splitlines`` also breaks at \x0b, \x0c, \x1c-\x1e, \x85, U+2028 and
# U+2029, characters a value may hold (JSON writes U+2028 unescaped): one record would become two broken lines.
_LINE_END = re.compile(r"\r\n|\r|\n")


def read_text(path: Path) -> str:
    """The file's text; a ``.gz`` file's decompressed (AWS and Azure write their exports gzipped by default)."""
    data = path.read_bytes()
    if path.name.lower().endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            raise FileRejected("file_compression", "file is not valid gzip") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise FileRejected("file_encoding", "file is not UTF-8 text") from None


def split_lines(text: str) -> list[str]:
    lines = _LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()  # the text ends with a line end (or is empty)
    return lines


def _content_lines(chunks: Iterable[bytes]) -> int:
    """Lines holding anything but white space, in a stream of bytes (\n, \r\n or \r line ends)."""
    count, tail = 0, b""
    for chunk in chunks:
        lines = (tail + chunk).replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        tail = lines.pop()
        count += sum(1 for line in lines if line.strip())
    return count + (1 if tail.strip() else 0)


def count_records(path: Path, header_lines: int = 1) -> int:
    """How many records a text file (plain or ``.gz``) refused whole held: its non-blank lines less the header.

    At least 1: a file refused whole is itself one record not loaded, even when it held no data line.
    """
    try:
        with gzip.open(path, "rb") if path.name.lower().endswith(".gz") else path.open("rb") as handle:
            lines = _content_lines(iter(lambda: handle.read(1 << 20), b""))
    except (OSError, EOFError, zlib.error):
        return 1
    return max(1, lines - header_lines)


def whole_file(rule: str, message: str, records: int) -> Rejection:
    """The line-0 rejection of a file refused whole, saying how many records were not loaded."""
    held = f"its {records} records were not loaded" if records > 1 else "nothing in it was loaded"
    return Rejection(line=0, rule=rule, message=f"{message}; {held}", records=records)


def reject_file(parsed: ParsedFile, error: FileRejected) -> ParsedFile:
    """Turn ``parsed`` into one line-0 rejection: the whole file is quarantined, with every record it held."""
    records = count_records(parsed.path, error.header_lines)
    parsed.rows.clear()
    parsed.rejections[:] = [whole_file(error.rule, str(error), records)]
    parsed.rows_in = records
    return parsed


def parse_file(path: Path, parse_lines: Callable[[list[str], ParsedFile], None]) -> ParsedFile:
    """Run a line parser over one file; a whole-file failure becomes a single line-0 rejection."""
    parsed = ParsedFile(path=path, sha256=file_sha256(path))
    try:
        parsed.text = read_text(path)
        parse_lines(split_lines(parsed.text), parsed)
    except FileRejected as error:
        reject_file(parsed, error)
    finally:
        parsed.text = None
    return parsed


def csv_line_parser(required_columns: Iterable[str]) -> Callable[[list[str], ParsedFile], None]:
    """Parse a CSV with a header into string rows; a header missing required columns rejects the file."""
    required = list(required_columns)

    def parse(lines: list[str], parsed: ParsedFile) -> None:
        if not lines:
            return
        # The text as written (newline="": line ends are the csv module's to read), so a quoted value keeps
        # its \r\n or \r; the lines joined where there is no such text or a caller changed the lines.
        written = parsed.text is not None and split_lines(parsed.text) == lines
        text = parsed.text if written else "\n".join(lines)
        reader = csv.reader(io.StringIO(text, newline=""))
        try:
            header = [h.strip() for h in next(reader)]
        except csv.Error:
            raise FileRejected("csv_header", "header line is not valid CSV") from None
        missing = [c for c in required if c not in header]
        if missing:
            raise FileRejected("csv_header", f"header lacks required column(s): {', '.join(missing)}")
        while True:
            try:
                values = next(reader)
            except StopIteration:
                break
            except csv.Error as error:
                parsed.rows_in += 1
                parsed.rejections.append(Rejection(reader.line_num, "csv_syntax", str(error)))
                continue
            line = reader.line_num
            if not any(v.strip() for v in values):
                continue
            parsed.rows_in += 1
            if len(values) != len(header):
                parsed.rejections.append(
                    Rejection(
                        line,
                        "csv_field_count",
                        f"{len(values)} fields where the header has {len(header)}",
                        lines[line - 1] if line <= len(lines) else None,
                    )
                )
                continue
            row = {name: (value.strip() or None) for name, value in zip(header, values, strict=True)}
            row["source_line"] = line
            parsed.rows.append(row)

    return parse


def mapped_csv_line_parser(
    required_columns: Iterable[str], map_row: Callable[[dict[str, Any]], dict[str, Any]]
) -> Callable[[list[str], ParsedFile], None]:
    """``csv_line_parser``, each row then mapped into its raw shape; a row the mapping refuses (``RowRejected``)
    is quarantined with the mapping's rule."""
    read_csv = csv_line_parser(required_columns)

    def parse(lines: list[str], parsed: ParsedFile) -> None:
        read_csv(lines, parsed)
        kept = []
        for row in parsed.rows:
            try:
                kept.append(dict(map_row(row), source_line=row["source_line"]))
            except RowRejected as error:
                parsed.rejections.append(Rejection(row["source_line"], error.rule, str(error)))
        parsed.rows[:] = kept

    return parse


# A \uXXXX escape in the surrogate range; only such an escape can put an unpaired surrogate into a string
# decoded from UTF-8 text, and DuckDB (like any UTF-8 store) cannot hold one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _is_unicode(obj: object) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, RecursionError):
        return False
    return True


def jsonl_line_parser(fields: Iterable[str]) -> Callable[[list[str], ParsedFile], None]:
    """Parse JSON Lines into rows of the given fields; a line that is not a JSON object is rejected."""
    names = list(fields)

    def parse(lines: list[str], parsed: ParsedFile) -> None:
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            parsed.rows_in += 1
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError):
                # ValueError: JSONDecodeError, and an integer past Python's 4,300-digit conversion limit.
                parsed.rejections.append(Rejection(number, "json_syntax", "line is not valid JSON", text))
                continue
            if not isinstance(obj, dict):
                parsed.rejections.append(Rejection(number, "json_object", "line is not a JSON object", text))
                continue
            row = {name: obj.get(name) for name in names}
            if _SURROGATE_ESCAPE.search(text) and not _is_unicode(row):
                parsed.rejections.append(
                    Rejection(
                        number,
                        "json_text",
                        "a string holds an unpaired surrogate escape (\\ud800-\\udfff), which is not text",
                        text,
                    )
                )
                continue
            row["source_line"] = number
            parsed.rows.append(row)

    return parse
