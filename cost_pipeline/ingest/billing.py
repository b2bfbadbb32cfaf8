"""Billing (I4): FOCUS 1.x exports, CSV or Parquet, exactly as providers write them.

Providers ship different subsets of the FOCUS columns in different orders; this reads the columns the pipeline
uses by their FOCUS names, keeps the rest of the file untouched, and takes the batch key from the ``Tags`` JSON
object (key ``batch_id`` unless configured). ``BilledCost`` feeds the cash book, ``EffectiveCost`` the resource
book; a restated line (``ChargeClass = Correction``) is kept as such. Who the line is from (ProviderName, or FOCUS
1.2's ServiceProviderName; PublisherName, InvoiceIssuerName) is kept for the FOCUS export.

Amounts are kept exact at the precision the export writes (the FinOps Foundation's sample writes 11 decimals,
scientific notation is FOCUS numeric format too); a Parquet double is read as its shortest decimal text. An id
(ResourceId, BillingAccountId, SubAccountId) in a Parquet double column is its whole number's text (1001.0 is job
1001), a fraction, NaN or infinity quarantined (``<column>.whole_number``), as telemetry's job ids. The text
``NULL``/``null`` is a missing value in every column, ``Tags`` included. Date-times must be ISO 8601, as FOCUS
requires: anything else is quarantined (rule ``<column>.iso_8601``), never guessed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Context, Decimal
from functools import lru_cache
from pathlib import Path

from cost_pipeline.contract import schemas
from cost_pipeline.ingest.lib import whole_ids
from cost_pipeline.ingest.lib.records import RowRejected, mapped_csv_line_parser, refusal
from cost_pipeline.ingest.lib.source import LineParser, RowLoader, Source, batch_lineage
from cost_pipeline.ingest.lib.timestamps import iso_utc_naive

REQUIRED = ("ChargePeriodStart", "ChargePeriodEnd", "BilledCost", "EffectiveCost")
COLUMNS = {
    "BillingAccountId": "billing_account_id",
    "SubAccountId": "sub_account_id",
    "BillingPeriodStart": "billing_period_start",
    "BillingPeriodEnd": "billing_period_end",
    "ChargePeriodStart": "charge_period_start",
    "ChargePeriodEnd": "charge_period_end",
    "ChargeCategory": "charge_category",
    "ChargeClass": "charge_class",
    "ChargeFrequency": "charge_frequency",
    "PricingCategory": "pricing_category",
    "BilledCost": "billed_cost",
    "EffectiveCost": "effective_cost",
    "ListCost": "list_cost",
    "ContractedCost": "contracted_cost",
    "BillingCurrency": "billing_currency",
    "ResourceId": "resource_id",
    "ResourceName": "resource_name",
    "ServiceName": "service_name",
    "ServiceCategory": "service_category",
    "InvoiceId": "invoice_id",
    "SkuId": "sku_id",
    "ConsumedQuantity": "consumed_quantity",
    "ConsumedUnit": "consumed_unit",
    "CommitmentDiscountId": "commitment_discount_id",
    "CommitmentDiscountStatus": "commitment_discount_status",
    "ProviderName": "provider_name",
    "PublisherName": "publisher_name",
    "InvoiceIssuerName": "invoice_issuer_name",
}
# FOCUS 1.2 names the provider ServiceProviderName and keeps ProviderName as deprecated: the new name wins.
PROVIDER_SUCCESSOR = "ServiceProviderName"
# Ids a Parquet export may hold as doubles (pandas writes an integer column with nulls so): 1001.0 is 1001, the sacct
# job and the account the CSV export names; a fraction, NaN or an infinity is quarantined (lib/whole_ids.py).
IDS = {"billing_account_id": "a billing account", "sub_account_id": "a sub-account", "resource_id": "a resource"}
TIMESTAMPS = ("billing_period_start", "billing_period_end", "charge_period_start", "charge_period_end")
AMOUNTS = ("billed_cost", "effective_cost", "list_cost", "contracted_cost")
# The raw amount columns' precision (schemas.billing_focus: DECIMAL(38,18)).
AMOUNT_DECIMALS, AMOUNT_DIGITS = 18, 20
_SCALE = Decimal(1).scaleb(-AMOUNT_DECIMALS)
_PRECISION = Context(prec=AMOUNT_DIGITS + AMOUNT_DECIMALS + 2)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,4})?", re.ASCII)


def _missing_as_none(value: object) -> object:
    """Exports write a missing value as an empty field or as the text ``null``."""
    return None if isinstance(value, str) and value.strip().lower() in ("", "null") else value


class AmountError(RowRejected):
    def __init__(self, column: str, why: str) -> None:
        super().__init__(f"{column}.amount", f"column {column} is not an amount such as 12.3456 ({why})")


def _fits(number: Decimal) -> bool:
    return number.adjusted() < AMOUNT_DIGITS and number == number.quantize(_SCALE, context=_PRECISION)


def exact_amount(value: object, column: str) -> str | None:
    """An amount as exact plain decimal text, whatever precision or notation the export wrote.

    Text (``0.00000080000``, ``1.6E-05``) and Parquet decimals are kept exact; a Parquet double is read as its
    shortest decimal text, rounded to the column's 18 decimals. ``AmountError`` when it is no number or does not fit.
    """
    if value is None:
        return None
    if isinstance(value, float):
        number = Decimal(repr(value)) if math.isfinite(value) else Decimal("NaN")
        if number.is_finite() and number.adjusted() < AMOUNT_DIGITS:
            number = number.quantize(_SCALE, context=_PRECISION)
    elif isinstance(value, Decimal | int) and not isinstance(value, bool):
        number = Decimal(value)
    elif isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        number = Decimal(value.strip())
    else:
        raise AmountError(column, "a decimal number, plain or in scientific notation")
    if not number.is_finite():
        raise AmountError(column, "not a finite number")
    if not _fits(number):
        raise AmountError(column, f"at most {AMOUNT_DIGITS} digits before the point and {AMOUNT_DECIMALS} after")
    return format(number, "f")


class TagsError(RowRejected):
    def __init__(self, message: str) -> None:
        super().__init__("tags.json_object", message)


def batch_from_tags(tags: object, key: str) -> str | None:
    """The batch key from a FOCUS ``Tags`` JSON object; None when absent; ``TagsError`` when not an object."""
    if tags in (None, ""):
        return None
    try:
        parsed = json.loads(tags) if isinstance(tags, str) else tags
    except json.JSONDecodeError:
        raise TagsError("Tags is not valid JSON") from None
    if not isinstance(parsed, dict):
        raise TagsError("Tags is not a JSON object")
    value = parsed.get(key)
    return None if value in (None, "") else str(value)


# An offset after a time of day (+08:00, -0500, +01).
_OFFSET = re.compile(r"\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?([+-]\d{2}(?::?\d{2})?)$")


def utc_only(value: object, column: str) -> object:
    """FOCUS writes every date-time in UTC. One with another offset is refused (rule ``<column>.utc``), not converted:
    a bill whose BillingPeriodStart is 2026-12-01T00:00:00+08:00 is December's in the provider's zone, and read as
    the UTC instant 30 November 16:00 it would be booked in November."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        offset = value.utcoffset()
        shown = str(offset)
    elif isinstance(value, str) and (found := _OFFSET.search(value.strip())):
        shown = found.group(1)
        offset = int(shown[1:3]) * 60 + int(shown[-2:] if len(shown) > 3 else 0)
    else:
        return value
    if offset:
        raise RowRejected(
            f"{column}.utc",
            f"column {column} is not in UTC: FOCUS date-times are UTC (2026-11-30T00:00:00Z), this one has the "
            f"offset {shown}; read as UTC, a period in another zone would be booked in another month",
        )
    return value


def focus_row(row: dict[str, object], tag_key: str) -> dict[str, object]:
    """One FOCUS line (by FOCUS column names) -> the raw billing shape; raises ``RowRejected`` for a broken rule."""
    mapped = {column: _missing_as_none(row.get(name)) for name, column in COLUMNS.items()}
    if "BillingCurrency" in row and (mapped["billing_currency"] is None or not str(mapped["billing_currency"]).strip()):
        raise RowRejected(
            "billing_currency.not_nullable",
            "column BillingCurrency is blank: FOCUS requires it on every line, and the line's currency is unknown "
            "(never assumed); an export without the column is read in the reporting currency",
        )
    for column, names in IDS.items():
        mapped[column] = whole_ids.id_text(mapped[column], column, names)
    mapped["provider_name"] = _missing_as_none(row.get(PROVIDER_SUCCESSOR)) or mapped["provider_name"]
    for column in TIMESTAMPS:
        mapped[column] = iso_utc_naive(utc_only(mapped[column], column), column)
    for column in AMOUNTS:
        mapped[column] = exact_amount(mapped[column], column)
    tags = _missing_as_none(row.get("Tags"))
    mapped["tags"] = json.dumps(tags, sort_keys=True, default=str) if isinstance(tags, dict) else tags
    mapped["batch_id"] = batch_from_tags(tags, tag_key)
    return mapped


def focus_line_parser(tag_key: str = "batch_id") -> LineParser:
    return mapped_csv_line_parser(REQUIRED, lambda row: focus_row(row, tag_key))


@dataclass(frozen=True)
class FocusOptions:
    """Which key of the FOCUS ``Tags`` JSON object carries the batch key."""

    batch_tag_key: str = "batch_id"


# Export runs. A cloud FOCUS export refreshed during an open billing period writes each run (AWS Data Exports with
# "Create new export version": an execution; Azure Cost Management: a run) into its own folder, with a manifest that
# lists the run's data files. A later run restates the period whole, a line's amount revised or not, so the lines of
# an older run of the same billing account and period must not count beside it (stg_billing__focus_charges).
# AWS: <export-name>-Manifest.json (under metadata/<partition>/, not beside the data), with executionId and
# dataFiles (s3:// URIs), and no time of the run; Azure: manifest.json, with runInfo.runId, runInfo.submittedTime and
# blobs[].blobName (blobCount too). Runs are ordered in staging: Azure's submittedTime, then arrival, then the
# manifest's path (docs/inputs.md).
MANIFEST_PATTERNS = ("**/*-Manifest.json", "**/manifest.json")
DATA_SUFFIXES = (".csv", ".csv.gz", ".parquet")
# The run's own time where its manifest has one: Azure's runInfo.submittedTime. AWS documents none (executionId,
# exportArn, columns, dataFiles, additionalOutputFiles...): its runs are ordered by arrival alone.
_RUN_TIME = ("runInfo", "submittedTime")


@dataclass(frozen=True)
class ExportRun:
    """What a FOCUS export manifest says of its run: its id, its time (Azure's; None for AWS), the data files it lists
    (each as its folder's name and its own name, the last two parts of its URI or blob path), how many it wrote, and
    the manifest's landing path."""

    run_id: str
    run_at: datetime | None
    files: frozenset[tuple[str, str]]
    expected: int  # how many data files the run wrote (blobCount when it says more than are listed)
    manifest: str = ""


def _field(document: dict, path: tuple[str, ...]) -> object:
    value: object = document
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _folder_and_name(uri: str) -> tuple[str, str]:
    parts = [p for p in uri.strip().split("/") if p]
    return (parts[-2] if len(parts) > 1 else "", parts[-1])


def export_run(document: object) -> ExportRun | None:
    """An AWS Data Exports or Azure Cost Management export manifest -> ``ExportRun``; None when it names no run or no
    data file (the files it would list are then read as files without a manifest)."""
    if not isinstance(document, dict):
        return None
    run_id = document.get("executionId") or _field(document, ("runInfo", "runId"))
    listed = document.get("dataFiles")
    if listed is None:
        listed = [b.get("blobName") for b in document.get("blobs") or [] if isinstance(b, dict)]
    files = frozenset(_folder_and_name(f) for f in listed or [] if isinstance(f, str) and f.strip("/ "))
    if not isinstance(run_id, str) or not run_id.strip() or not files:
        return None
    run_at = None
    text = _field(document, _RUN_TIME)
    if isinstance(text, str):
        try:
            run_at = iso_utc_naive(text, "manifest")
        except RowRejected:
            run_at = None  # an unreadable time: the run is ordered by arrival, as AWS's are
    count = document.get("blobCount")
    expected = max(len(files), count if isinstance(count, int) and not isinstance(count, bool) else 0)
    return ExportRun(run_id.strip(), run_at, files, expected)


@lru_cache(maxsize=256)
def _read_manifest(path: Path, _stamp: tuple[int, int]) -> ExportRun | None:
    """The run a manifest file names (None if it names none or cannot be read); cached by the file's stat."""
    try:
        return export_run(json.loads(path.read_text(encoding="utf-8-sig")))
    except (OSError, ValueError):
        return None


def _manifests(top: Path, landing_dir: Path) -> list[ExportRun]:
    """Every readable manifest under ``top`` naming a run, by path."""
    runs = []
    for candidate in sorted({p for pattern in MANIFEST_PATTERNS for p in top.glob(pattern)}):
        if refusal(candidate, landing_dir) is not None:
            continue
        stat = candidate.stat()
        run = _read_manifest(candidate, (stat.st_mtime_ns, stat.st_size))
        if run is not None:
            runs.append(replace(run, manifest=candidate.relative_to(landing_dir).as_posix()))
    return runs


@dataclass(frozen=True)
class _Runs:
    """The export runs of one landing sub-folder: the run listing each data file (a file's folder's name and its own
    name: the first run by its manifest's path), and the folders holding a listed data file."""

    listing: dict[tuple[str, str], ExportRun]
    run_folders: frozenset[Path]
    beside: frozenset[Path]  # the folders that hold a run folder

    @classmethod
    def under(cls, top: Path, landing_dir: Path) -> _Runs:
        listing: dict[tuple[str, str], ExportRun] = {}
        for run in _manifests(top, landing_dir):
            for key in run.files:
                listing.setdefault(key, run)
        folders = (
            frozenset(
                p.parent
                for p in top.rglob("*")
                if p.name.endswith(DATA_SUFFIXES) and (p.parent.name, p.name) in listing
            )
            if listing
            else frozenset()
        )
        return cls(listing, folders, frozenset(f.parent for f in folders))


def run_columns(landing_dir: Path) -> Callable[[Path], dict[str, object]]:
    """The raw columns every row of a data file takes from the export run that lists it (``RowLoader.file_columns``).

    A data file is of the run whose manifest (anywhere under the source's landing sub-folder, the first by path)
    lists a file of its folder's name and its name. A data file no manifest lists, in a folder that holds a listed
    file or beside such a folder (a run whose manifest has not come yet: AWS writes it after the data files), is
    held as a run without a manifest: ``export_run_id`` its folder, no manifest, never complete. Any other file: null
    (read as before). The manifests are read and the sub-folder walked once a load, not once a data file: an export
    refreshed several times a day has a run folder per refresh, and each file's own walk over all of them made a
    load's time grow with the square of the runs."""
    folders: dict[Path, _Runs] = {}

    def columns(path: Path) -> dict[str, object]:
        top = landing_dir / path.relative_to(landing_dir).parts[0]
        runs = folders.get(top)
        if runs is None:
            runs = folders[top] = _Runs.under(top, landing_dir)
        run = runs.listing.get((path.parent.name, path.name))
        if run is not None:
            return {
                "export_run_id": run.run_id,
                "export_run_at": run.run_at,
                "export_run_files": run.expected,
                "export_run_manifest": run.manifest,
            }
        held = path.parent in runs.run_folders or path.parent.parent in runs.beside
        return {
            "export_run_id": path.parent.relative_to(landing_dir).as_posix() if held else None,
            "export_run_at": None,
            "export_run_files": None,
            "export_run_manifest": None,
        }

    return columns


# A FOCUS line exported again counts once, from the newest file, its tags not compared (stg_billing__focus_charges):
# with a file retracted, an earlier export of its line counts again, maybe tagged for another batch. So a file fed
# the batch of every delivery of each charge it holds (same resource and charge period start, which is all the job
# match reads; a line without a resource, a tax or a support fee, by its category and amounts too), resolved as
# int_focus_charges_attributed resolves it: the charge's job's batch, else a registered tag, else unattributed.
FOCUS_BATCHES = batch_lineage(
    "raw.billing_focus",
    batch="coalesce(jobs.batch_id, registered.batch_id, 'unattributed')",
    joined="inner join raw.billing_focus as delivery "
    "on delivery.charge_period_start is not distinct from lineage.charge_period_start "
    "and (delivery.resource_id = lineage.resource_id or (delivery.resource_id is null and lineage.resource_id is null "
    "and delivery.charge_category is not distinct from lineage.charge_category "
    "and delivery.billed_cost is not distinct from lineage.billed_cost "
    "and delivery.effective_cost is not distinct from lineage.effective_cost)) "
    "left join staging.stg_registry__batches as registered on registered.batch_id = delivery.batch_id "
    "left join (select distinct resource_id, charge_period_start, job_key "
    "from intermediate.int_focus_charges_attributed where resource_id is not null) as counted "
    "on counted.resource_id = lineage.resource_id "
    "and counted.charge_period_start is not distinct from lineage.charge_period_start "
    "left join intermediate.int_jobs_attributed as jobs on jobs.job_key = counted.job_key",
)

SOURCES = (
    Source(
        "billing_focus",
        ("I4",),
        "billing",
        ("**/*.csv", "**/*.csv.gz", "**/*.parquet"),
        "FOCUS 1.x billing exports",
        RowLoader(
            schemas.billing_focus,
            lambda _schema, options: focus_line_parser(options.batch_tag_key),
            parquet_row=lambda options: lambda row: focus_row(row, options.batch_tag_key),
            file_columns=run_columns,
        ),
        options=FocusOptions,
        companions=MANIFEST_PATTERNS,
        batch_lineage=FOCUS_BATCHES,
    ),
)
