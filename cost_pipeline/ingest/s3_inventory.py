"""S3 Inventory files (I6) exactly as AWS writes them.

Three shapes are accepted:

- header-less CSV (``.csv`` or ``.csv.gz``) with a ``manifest.json`` beside it: the manifest's ``fileSchema`` names
  the columns, its ``creationTimestamp`` (milliseconds since the epoch, as text) is the inventory date, and its
  ``files[].key`` lists the data files (matched by file name: the landing folder holds the data files beside the
  manifest, not at their S3 key path);
- CSV with a header line naming the same fields;
- Parquet (AWS's own column names, ``last_modified_date``, ``e_tag``..., or the CSV field names).

Without a manifest listing the file, the inventory date comes from an ISO date in the file name
(``..._2026-11-30.csv`` or AWS's ``2026-11-30T01-00Z``); a file with neither is quarantined whole.
Fields are matched case-insensitively ignoring ``_`` (``LastModifiedDate`` = ``last_modified_date``); fields the
pipeline does not use (IsLatest, EncryptionStatus, ...) are accepted and ignored. CSV keys are URL-encoded by AWS
and are decoded here.

Rows go through the shared pandas/pandera loader (``sources.load_source``): the per-row work is a dictionary
remap; a many-million-row inventory would want the in-database path device samples use.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote_plus

from cost_pipeline.ingest.parquet import parse_parquet
from cost_pipeline.ingest.records import (
    FileRejected,
    ParsedFile,
    csv_line_parser,
    file_sha256,
    parse_file,
    reject_file,
)
from cost_pipeline.parsing.timestamps import utc_naive

# Inventory field (normalised: lower case, letters only) -> raw column.
FIELDS = {"bucket": "bucket", "key": "object_key", "versionid": "version_id", "size": "size_bytes",
          "lastmodifieddate": "last_modified_at", "etag": "etag", "storageclass": "storage_class",
          "isdeletemarker": "is_delete_marker"}
REQUIRED = ("bucket", "key", "size", "lastmodifieddate", "storageclass")
MANIFEST_GLOB = "*manifest*.json"
_DATE_IN_NAME = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:T(\d{2})[-:](\d{2})(?:[-:](\d{2}))?Z?)?")


def normalise(field: str) -> str:
    return re.sub(r"[^a-z]", "", field.lower())


@dataclass(frozen=True)
class Manifest:
    """The parts of an S3 Inventory manifest.json the loader needs."""

    columns: tuple[str, ...]
    inventory_at: datetime
    file_format: str


def read_manifest(document: object) -> Manifest:
    """A parsed manifest.json -> ``Manifest``; ``FileRejected`` (rule ``inventory_manifest``) when it is unusable."""
    if not isinstance(document, dict):
        raise FileRejected("inventory_manifest", "manifest.json is not a JSON object")
    file_format = str(document.get("fileFormat") or "CSV")
    schema = document.get("fileSchema")
    if not isinstance(schema, str) or not schema.strip():
        raise FileRejected("inventory_manifest", "manifest.json has no fileSchema")
    columns: tuple[str, ...] = ()
    if file_format.upper() == "CSV":
        columns = tuple(c.strip() for c in schema.split(","))
        missing = [f for f in REQUIRED if f not in {normalise(c) for c in columns}]
        if missing:
            raise FileRejected("inventory_manifest", f"manifest fileSchema lacks field(s): {', '.join(missing)}")
    created = document.get("creationTimestamp")
    try:
        inventory_at = datetime.fromtimestamp(int(str(created)) / 1000, UTC).replace(tzinfo=None)
    except (TypeError, ValueError, OverflowError, OSError):
        raise FileRejected("inventory_manifest",
                           "manifest creationTimestamp is not milliseconds since the epoch") from None
    return Manifest(columns, inventory_at, file_format)


def manifest_for(path: Path) -> Manifest | None:
    """The manifest beside ``path`` whose ``files[].key`` names it; None when no manifest lists it.

    A manifest that is not JSON, or that lists the file but is unusable, rejects the file.
    """
    unreadable = None
    for candidate in sorted(path.parent.glob(MANIFEST_GLOB)):
        try:
            document = json.loads(candidate.read_bytes().decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            unreadable = candidate.name
            continue
        files = document.get("files") if isinstance(document, dict) else None
        names = {Path(str(f.get("key", ""))).name for f in files or [] if isinstance(f, dict)}
        if path.name in names:
            return read_manifest(document)
    if unreadable is not None:
        raise FileRejected("inventory_manifest", "a manifest beside the file is not valid JSON")
    return None


def date_from_name(path: Path) -> datetime:
    """The inventory date written in the file name; ``FileRejected`` (rule ``inventory_date``) without one."""
    match = _DATE_IN_NAME.search(path.name)
    if match is None:
        raise FileRejected("inventory_date", "no manifest lists the file and its name holds no ISO date")
    try:
        return datetime(*(int(part) for part in match.groups() if part is not None))
    except ValueError:
        raise FileRejected("inventory_date", "the date in the file name is not a calendar date") from None


def inventory_row(row: dict[str, object], inventory_at: datetime, date_from: str,
                  url_encoded_keys: bool) -> dict[str, object]:
    """One inventory record (any field spelling) -> the raw ``storage_inventory`` shape."""
    mapped: dict[str, object] = {column: None for column in FIELDS.values()}
    for name, value in row.items():
        column = FIELDS.get(normalise(name))
        if column is not None:
            mapped[column] = value
    key = mapped["object_key"]
    if url_encoded_keys and isinstance(key, str):
        mapped["object_key"] = unquote_plus(key)
    # A delete marker (versioned inventories) has no Size: it holds no bytes.
    is_delete_marker = str(mapped.pop("is_delete_marker")).lower() == "true"
    if mapped["size_bytes"] is None and is_delete_marker:
        mapped["size_bytes"] = 0
    mapped["last_modified_at"] = utc_naive(mapped["last_modified_at"])
    mapped["inventory_at"] = inventory_at
    mapped["inventory_date_from"] = date_from
    return mapped


def _header_fields(first_line: str) -> bool:
    """Whether a CSV's first line is a header naming the inventory fields."""
    names = {normalise(v) for v in first_line.replace('"', "").split(",")}
    return "bucket" in names and "key" in names


def _parse_csv(path: Path, manifest: Manifest | None) -> ParsedFile:
    def parse(lines: list[str], parsed: ParsedFile) -> None:
        if manifest is not None:
            read = csv_line_parser((), fieldnames=manifest.columns)
            inventory_at, date_from = manifest.inventory_at, "manifest"
        elif lines and _header_fields(lines[0]):
            read = csv_line_parser(())
            inventory_at, date_from = date_from_name(path), "file_name"
        else:
            raise FileRejected("inventory_schema", "no header line and no manifest.json beside the file lists it")
        read(lines, parsed)
        if manifest is None and parsed.rows:
            _require_fields(parsed.rows[0], "csv_header")
        parsed.rows[:] = [dict(inventory_row(row, inventory_at, date_from, url_encoded_keys=True),
                               source_line=row["source_line"]) for row in parsed.rows]

    return parse_file(path, parse)


def _require_fields(names: object, rule: str) -> None:
    missing = [f for f in REQUIRED if f not in {normalise(str(n)) for n in names}]
    if missing:
        raise FileRejected(rule, f"the file lacks required field(s): {', '.join(missing)}")


def _parse_parquet(path: Path, manifest: Manifest | None) -> ParsedFile:
    inventory_at, date_from = (manifest.inventory_at, "manifest") if manifest else (date_from_name(path), "file_name")

    def map_row(row: dict[str, object]) -> dict[str, object]:
        _require_fields(row, "parquet_schema")
        return inventory_row(row, inventory_at, date_from, url_encoded_keys=False)

    return parse_parquet(path, map_row)


def parse_inventory(path: Path) -> ParsedFile:
    """One inventory data file -> rows and rejections; a file that cannot be placed in time is rejected whole."""
    try:
        manifest = manifest_for(path)
        if path.suffix.lower() == ".parquet":
            return _parse_parquet(path, manifest)
        return _parse_csv(path, manifest)
    except FileRejected as error:
        return reject_file(ParsedFile(path=path, sha256=file_sha256(path)), error)
