"""Storage (I6): S3 Inventory files exactly as AWS writes them, loaded and validated inside DuckDB; the bucket prefix
rules and the storage prices per class.

Three inventory shapes are accepted:

- header-less CSV (``.csv`` or ``.csv.gz``) with its ``manifest.json``: the manifest's ``fileSchema`` names the
  columns, its ``creationTimestamp`` (milliseconds since the epoch, as text) is the inventory date, and its
  ``files[].key`` lists the data files. The manifest is either beside the data file (matched by file name), or in
  the layout AWS delivers and ``aws s3 sync`` copies: ``<prefix>/<bucket>/<config-id>/<YYYY-MM-DDTHH-MMZ>/
  manifest.json`` with the data files under ``<prefix>/<bucket>/<config-id>/data/`` (matched by the key's path
  tail ``<config-id>/data/<file>``: the key is relative to the destination bucket, the landing folder may hold it
  under any prefix);
- CSV (plain or ``.gz``) with a header line naming the same fields;
- Parquet (AWS's own column names, ``last_modified_date``, ``e_tag``..., or the CSV field names).

Without a manifest listing the file, the inventory date comes from an ISO date in the file name
(``..._2026-11-30.csv`` or AWS's ``2026-11-30T01-00Z``); a file with neither is quarantined whole (rule
``inventory_date``), and so is a header-less file no manifest lists (``inventory_schema``), a header or Parquet
schema without the required fields (``csv_header``, ``parquet_schema``) and an unusable manifest
(``inventory_manifest``). An inventory configured without ``StorageClass`` (the field is optional in AWS's
configuration) is priced at the contract's ``storage_default_class`` and the file is flagged (logged and listed in
the asset's ``flagged_files``), not rejected; without a default class in the contract it is rejected whole.
Fields are matched case-insensitively ignoring everything but letters
(``LastModifiedDate`` = ``last_modified_date``); fields the pipeline does not use (IsLatest, EncryptionStatus, ...)
are accepted and ignored. CSV keys are URL-encoded by AWS and are decoded as ``unquote_plus`` does (``+`` is a
space, ``%2B`` a plus); Parquet keys are stored as written. A delete marker (IsDeleteMarker true, no Size) holds
0 bytes; LastModifiedDate with an offset is converted to UTC. An object modified more than a day after the inventory
that lists it is quarantined (``last_modified_at.after_inventory``): an inventory lists what was.

An ML organisation's inventory holds hundreds of millions of objects, so rows never pass through Python: each file
is read by DuckDB and checked with SQL on the shared in-database path (``in_database.py``, as device samples), the
first broken rule (``size_bytes.non_negative`` or ``.too_large`` from its domain ``schemas.BYTES``,
``size_bytes.whole_number``, ...) sending a row to ``raw.quarantine`` with its file and line.
Python reads only the manifest (small JSON), a file's first line, and its bytes once to hash them. A file loaded on
an earlier night is not read again (``reuse``) while its bytes and what it reads beside them (``beside_file``: the
manifest listing it, or none, and the contract's default class) are what they were.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path, PurePosixPath

import duckdb

from cost_pipeline.contract import Contract, load_contract, schemas
from cost_pipeline.contract.schemas import STORAGE_INVENTORY_COLUMNS, STORAGE_INVENTORY_DOMAINS
from cost_pipeline.ingest.lib import in_database
from cost_pipeline.ingest.lib.records import FileRejected, Rejection, refusal
from cost_pipeline.ingest.lib.source import RowLoader, Source, batch_lineage, csv_columns
from cost_pipeline.ingest.lib.timestamps import utc_timestamp_sql
from cost_pipeline.ingest.lib.warehouse import IngestReport, file_pattern, quote

# Inventory field (normalised: lower case, letters only) -> raw column.
FIELDS = {
    "bucket": "bucket",
    "key": "object_key",
    "versionid": "version_id",
    "size": "size_bytes",
    "lastmodifieddate": "last_modified_at",
    "etag": "etag",
    "storageclass": "storage_class",
    "isdeletemarker": "is_delete_marker",
}
REQUIRED = ("bucket", "key", "size", "lastmodifieddate")  # storageclass: the contract's default without it
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
        raise FileRejected(
            "inventory_manifest", 'manifest.json should be a JSON object such as {"fileFormat": "CSV", "fileSchema": …}'
        )
    file_format = str(document.get("fileFormat") or "CSV")
    schema = document.get("fileSchema")
    if not isinstance(schema, str) or not schema.strip():
        raise FileRejected(
            "inventory_manifest", 'manifest.json should name the columns in fileSchema, such as "Bucket, Key, Size, …"'
        )
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
        raise FileRejected(
            "inventory_manifest",
            "manifest creationTimestamp should be milliseconds since the epoch as AWS writes it, "
            'such as "1764460800000"',
        ) from None
    return Manifest(columns, inventory_at, file_format)


def _manifests(folder: Path) -> list[tuple[Path, int]]:
    """The manifests that may list a data file of ``folder``, each with how many trailing parts of a key must match
    the file's path.

    Beside the file: its name. In AWS's layout (the file under ``<config-id>/data/``, the manifests in the dated
    folders ``<config-id>/<YYYY-MM-DDTHH-MMZ>/``): ``<config-id>/data/<file>``.
    """
    beside = [(c, 1) for c in sorted(folder.glob(MANIFEST_GLOB)) if not _folder(c)]
    if folder.name != "data":
        return beside
    dated = [(c, 3) for c in sorted(folder.parent.glob(f"*/{MANIFEST_GLOB}")) if not _folder(c) and c.parent != folder]
    return beside + dated


def _folder(path: Path) -> bool:
    """A folder whose name matches the manifests' pattern is no manifest; a link to one still passes ``refusal``."""
    return path.is_dir() and not path.is_symlink()


@dataclass(frozen=True)
class _Read:
    """One manifest file as a load reads it: why it could not be read (None: read), and each data file's key tail
    it lists, by how many trailing parts are compared (1 beside the data file, 3 in AWS's layout)."""

    unreadable: str | None
    document: object = None
    keys: tuple[PurePosixPath, ...] = ()


class Manifests:
    """The inventory manifests of one load's landing folder, each found, opened and read once a load.

    ``for_file`` is what the manifest lookup was for each data file (see ``_manifests``): asked by each data file's
    stage, identity and flag, every manifest of its configuration folder was globbed, opened and parsed again, so a
    load's time grew with the square of the days (a year of daily inventories: 365 manifests read for each of 365
    data files, three times a night, reused files too).
    """

    def __init__(self, landing_dir: Path) -> None:
        self.landing_dir = landing_dir
        self._read: dict[Path, _Read] = {}
        # a data file's folder -> the first candidate listing each key tail ((parts compared, tail) -> its place
        # and manifest), and the reason of the first candidate that could not be read
        self._index: dict[Path, tuple[dict[tuple[int, tuple[str, ...]], tuple[int, Path]], str | None]] = {}
        self._manifest: dict[Path, Manifest | FileRejected] = {}

    def _read_once(self, candidate: Path) -> _Read:
        read = self._read.get(candidate)
        if read is None:
            read = self._read[candidate] = self._open(candidate)
        return read

    def _open(self, candidate: Path) -> _Read:
        reason = refusal(candidate, self.landing_dir)
        if reason is not None:
            return _Read(f"the manifest {candidate.relative_to(self.landing_dir).as_posix()} {reason}")
        try:
            document = json.loads(candidate.read_bytes().decode("utf-8-sig"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            return _Read("a manifest beside the file is not readable JSON")
        files = document.get("files") if isinstance(document, dict) else None
        if not isinstance(files, list):
            return _Read(None, document)
        return _Read(None, document, tuple(PurePosixPath(str(f.get("key", ""))) for f in files if isinstance(f, dict)))

    def _folder_index(self, folder: Path) -> tuple[dict[tuple[int, tuple[str, ...]], tuple[int, Path]], str | None]:
        index = self._index.get(folder)
        if index is None:
            listed: dict[tuple[int, tuple[str, ...]], tuple[int, Path]] = {}
            unreadable = None
            for place, (candidate, depth) in enumerate(_manifests(folder)):
                read = self._read_once(candidate)
                unreadable = unreadable or read.unreadable
                for key in read.keys:
                    listed.setdefault((depth, key.parts[-depth:]), (place, candidate))
            index = self._index[folder] = (listed, unreadable)
        return index

    def for_file(self, path: Path) -> Manifest | None:
        """The manifest whose ``files[].key`` names ``path`` (see ``_manifests``); None when no manifest lists it.

        Each manifest is opened through ``records.refusal``, as every landing file is: a link out of the landing
        folder (or to a folder), a FIFO or a file that cannot be opened is never read. When no usable manifest lists
        the file, such a manifest, or one that is not JSON, rejects it (with the reason); so does one that lists it
        but is unusable.
        """
        listed, unreadable = self._folder_index(path.parent)
        matches = [listed[tail] for tail in ((1, path.parts[-1:]), (3, path.parts[-3:])) if tail in listed]
        if not matches:
            if unreadable is not None:
                raise FileRejected("inventory_manifest", unreadable)
            return None
        _, candidate = min(matches)
        manifest = self._manifest.get(candidate)
        if manifest is None:
            try:
                manifest = read_manifest(self._read_once(candidate).document)
            except FileRejected as rejected:
                manifest = rejected
            self._manifest[candidate] = manifest
        if isinstance(manifest, FileRejected):
            raise FileRejected(manifest.rule, str(manifest), manifest.header_lines)
        return manifest


def date_from_name(path: Path) -> datetime:
    """The inventory date written in the file name; ``FileRejected`` (rule ``inventory_date``) without one."""
    match = _DATE_IN_NAME.search(path.name)
    if match is None:
        raise FileRejected(
            "inventory_date",
            "no manifest lists the file, and its name should then hold the inventory date, "
            "such as inventory_2026-11-30.csv",
        )
    try:
        return datetime(*(int(part) for part in match.groups() if part is not None))
    except ValueError:
        raise FileRejected(
            "inventory_date", "the date in the file name should be a calendar date such as 2026-11-30"
        ) from None


def _header_fields(line: str) -> list[str] | None:
    """A CSV first line's field names (normalised) when it is a header naming the inventory fields, else None."""
    names = [normalise(v) for v in line.replace('"', "").split(",")]
    return names if "bucket" in names and "key" in names else None


def _require_fields(names: Iterable[str], rule: str) -> None:
    present = {normalise(n) for n in names}
    missing = [f for f in REQUIRED if f not in present]
    if missing:
        raise FileRejected(rule, f"the file lacks required field(s): {', '.join(missing)}")


# What Python's str.strip removes, as the CSV sources read values: a value of only these is blank.
_WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())


def _text(column: str | None, sql_type: str, csv: bool) -> str:
    """One landing column as text: a CSV value trimmed (blank is null); a Parquet timestamp with a zone in UTC."""
    if column is None:
        return "cast(null as varchar)"
    if csv:  # trim(x, characters) is slow: only a value that starts or ends with white space goes through it
        value, blank = quote(column), f"'{_WHITESPACE}'"
        edge = f"contains({blank}, left({value}, 1)) or contains({blank}, right({value}, 1))"
        return f"nullif(case when {edge} then trim({value}, {blank}) else {value} end, '')"
    if sql_type == "TIMESTAMP WITH TIME ZONE":
        return f"cast(timezone('UTC', {quote(column)}) as varchar)"
    return f"cast({quote(column)} as varchar)"


def _landing_select(
    by_field: dict[str, str],
    types: dict[str, str],
    inventory_at: datetime,
    date_from: str,
    csv: bool,
    default_class: str | None,
    rule: str,
) -> str:
    """The landing columns (by normalised field name) -> ``landing_rows``' columns, all text but inventory_at.

    Without a StorageClass field every object is of ``default_class``; without one either, the file is rejected.
    """
    text = {field: _text(by_field.get(field), types.get(by_field.get(field, ""), "VARCHAR"), csv) for field in FIELDS}
    if "storageclass" not in by_field:
        if default_class is None:
            raise FileRejected(
                rule, "the file lacks required field(s): storageclass, and the contract names no storage_default_class"
            )
        text["storageclass"] = "'" + default_class.replace("'", "''") + "'"
    # AWS URL-encodes CSV keys as unquote_plus reads them; DuckDB's url_decode leaves "+" as it is.
    key = f"try(url_decode(replace({text['key']}, '+', ' ')))" if csv else text["key"]
    # A delete marker (versioned inventories) has no Size: it holds no bytes.
    size = (
        f"case when {text['size']} is null and lower({text['isdeletemarker']}) = 'true' then '0' "
        f"else {text['size']} end"
    )
    return (
        f"{text['bucket']} as bucket, {key} as object_key, {text['versionid']} as version_id, "
        f"{size} as size_bytes, {text['lastmodifieddate']} as last_modified_at, {text['etag']} as etag, "
        f"{text['storageclass']} as storage_class, timestamp '{inventory_at.isoformat(sep=' ')}' as inventory_at, "
        f"'{date_from}' as inventory_date_from"
    )


def _stage_csv(
    con: duckdb.DuckDBPyConnection, path: Path, blank_lines: list[int], default_class: str | None, manifests: Manifests
) -> list[Rejection]:
    manifest = manifests.for_file(path)
    line = in_database.first_line(path)  # also refuses a .gz file that is not gzip
    named: dict[str, str] | None = None  # field -> landing column, when the manifest names the columns
    column_count: int | None = None
    if manifest is not None:
        if manifest.file_format.upper() != "CSV":
            raise FileRejected("inventory_manifest", "the manifest listing the file is not a CSV manifest")
        named = {normalise(c): f"c{i}" for i, c in enumerate(manifest.columns)}
        column_count, inventory_at, date_from = len(manifest.columns), manifest.inventory_at, "manifest"
    else:
        names = _header_fields(line)
        if names is None:
            raise FileRejected("inventory_schema", "no header line and no manifest.json beside the file lists it")
        inventory_at, date_from = date_from_name(path), "file_name"
        _require_fields(names, "csv_header")
    rule = "inventory_manifest" if named is not None else "csv_header"

    def select(types: dict[str, str]) -> str:
        by_field = named if named is not None else {normalise(n): n for n in types}
        return _landing_select(by_field, types, inventory_at, date_from, True, default_class, rule)

    return in_database.stage_csv(con, path, select, blank_lines, column_count=column_count, what="inventory")


def _stage_parquet(con: duckdb.DuckDBPyConnection, path: Path, default_class: str | None, manifests: Manifests) -> None:
    manifest = manifests.for_file(path)
    inventory_at, date_from = (manifest.inventory_at, "manifest") if manifest else (date_from_name(path), "file_name")

    def select(types: dict[str, str]) -> str:
        _require_fields(types, "parquet_schema")
        return _landing_select(
            {normalise(n): n for n in types}, types, inventory_at, date_from, False, default_class, "parquet_schema"
        )

    in_database.stage_parquet(con, path, select)


def _stage(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    blank_lines: list[int],
    *,
    default_class: str | None,
    manifests: Manifests,
) -> list[Rejection]:
    """One inventory data file -> ``landing_rows``; a file that cannot be placed in time is rejected whole."""
    if path.suffix.lower() == ".parquet":
        _stage_parquet(con, path, default_class, manifests)
        return []
    return _stage_csv(con, path, blank_lines, default_class, manifests)


def _bound(source: in_database.InDatabaseSource, contract: Contract, landing_dir: Path) -> in_database.InDatabaseSource:
    """The inventory source loading ``landing_dir``: the contract's default class, manifests looked up inside it
    (each read once a load)."""
    manifests = Manifests(landing_dir)
    return dataclasses.replace(
        source,
        stage=partial(_stage, default_class=contract.storage_default_class, manifests=manifests),
        identity=partial(inventory_date, manifests=manifests),
        flag=partial(class_flag, manifests=manifests),
        beside=partial(beside_file, default_class=contract.storage_default_class, manifests=manifests),
    )


def beside_file(path: Path, default_class: str | None, manifests: Manifests) -> str:
    """What a data file's rows take from beside it, as text: the manifest listing it (its columns, format and date;
    none: they come from the file's name and header line) or why a manifest rejects it, and the contract's default
    class (a file without StorageClass is priced at it). A file loaded before is read again when this changed."""
    try:
        listed: object = manifests.for_file(path)
    except FileRejected as rejected:
        listed = ("rejected", rejected.rule, str(rejected))
    return repr((listed, default_class))


def _fields_of(con: duckdb.DuckDBPyConnection, path: Path, manifests: Manifests) -> set[str] | None:
    """The inventory fields a data file holds (normalised), from its manifest, header line or Parquet schema (read on
    ``con``, the load's: a connection opened for each file cost 35 times the schema's read)."""
    if path.suffix.lower() == ".parquet":
        schema = in_database.columns_of(con, "select * from read_parquet(?)", [file_pattern(path)])
        return {normalise(name) for name in schema}
    manifest = manifests.for_file(path)
    if manifest is not None:
        return {normalise(c) for c in manifest.columns}
    return set(_header_fields(in_database.first_line(path)) or ())


def class_flag(con: duckdb.DuckDBPyConnection, path: Path, manifests: Manifests) -> str | None:
    """The flag of a file whose inventory has no StorageClass field: its objects are priced at the default class."""
    try:
        fields = _fields_of(con, path, manifests)
    except (FileRejected, duckdb.Error, OSError):
        return None  # the load rejects such a file with its own rule
    if not fields or "storageclass" in fields:
        return None
    return "the inventory has no StorageClass field: its objects are priced at the contract's storage_default_class"


# Text with a time of day and then a zone (Z or an offset) is read as a moment and converted to UTC; text without
# one is taken as UTC already (as ``lib.timestamps.utc_naive`` does).
_LAST_MODIFIED = utc_timestamp_sql("last_modified_at")
# (rule, condition that breaks it, message); evaluated in order, the first broken rule is recorded.
_RULES: list[in_database.Rule] = [
    ("bucket.present", "bucket is null", "bucket is empty"),
    ("object_key.present", "object_key is null", "object_key is empty or not valid URL encoding"),
    # not a number, negative or blank: .non_negative; over the domain's range: .too_large (schemas.BYTES)
    *in_database.domain_rules(STORAGE_INVENTORY_DOMAINS),
    ("size_bytes.whole_number", "not regexp_full_match(size_bytes, '\\d+')", "size_bytes should hold whole bytes"),
    ("last_modified_at.timestamp", f"({_LAST_MODIFIED}) is null", "last_modified_at is missing or not a timestamp"),
    # An inventory lists objects as they were when it was taken: one modified later is not what it listed. A day's
    # grace: AWS takes an inventory over hours, and a date in a file name has no time of day.
    (
        "last_modified_at.after_inventory",
        f"({_LAST_MODIFIED}) > inventory_at + interval 1 day",
        "last_modified_at should be no later than the inventory that lists the object (at most a day after its date)",
    ),
    ("storage_class.present", "storage_class is null", "storage_class is empty"),
]
_TYPED = (
    "bucket, object_key, version_id, try_cast(size_bytes as bigint), "
    f"{_LAST_MODIFIED}, etag, storage_class, inventory_at, inventory_date_from"
)


def inventory_date(path: Path, manifests: Manifests) -> str:
    """The date a data file's inventory was taken ('' when it cannot be placed: the load then rejects it).

    A bucket that did not change writes the same bytes every day: the date keeps each day's inventory its own.
    """
    try:
        manifest = manifests.for_file(path)
        return (manifest.inventory_at if manifest is not None else date_from_name(path)).isoformat()
    except FileRejected:
        return ""


PREFIX_RULES = Source(
    "storage_prefix_rules",
    ("I6",),
    "storage",
    ("prefix_rules*.csv",),
    "Bucket prefix rules with purpose, owner, batch and retention",
    RowLoader(schemas.storage_prefix_rules, csv_columns),
)
PRICES = Source(
    "storage_prices",
    ("I6",),
    "storage",
    ("storage_prices*.csv",),
    "Storage price per class and GB-month",
    RowLoader(schemas.storage_prices, csv_columns),
)
INVENTORY = Source(
    "storage_inventory",
    ("I6",),
    "storage",
    ("**/*.csv", "**/*.csv.gz", "**/*.parquet"),
    "S3 Inventory rows, as AWS writes them",
    in_database.InDatabaseSource(
        STORAGE_INVENTORY_COLUMNS,
        _TYPED,
        _RULES,
        _stage,  # with identity and flag, bound to the contract and landing folder of each load (``_bound``)
        bound=_bound,
        domains=STORAGE_INVENTORY_DOMAINS,
    ),
    exclude=(*PREFIX_RULES.patterns, *PRICES.patterns),  # the storage folder's other sources
    # read beside the data files: the manifest, and the checksum AWS delivers with it
    companions=(f"**/{MANIFEST_GLOB}", "**/manifest.checksum"),
    batch_lineage=batch_lineage("intermediate.int_storage_objects_costed"),
)
SOURCES = (INVENTORY, PREFIX_RULES, PRICES)


def load_storage_inventory(
    con: duckdb.DuckDBPyConnection, landing_dir: Path, contract: Contract | None = None
) -> IngestReport:
    """Replace ``raw.storage_inventory`` from every inventory data file, quarantining what breaks the contract."""
    return INVENTORY.load(con, landing_dir, contract or load_contract())
