"""Billing (I4): FOCUS 1.x exports, CSV or Parquet, exactly as providers write them.

Providers ship different subsets of the FOCUS columns in different orders; this reads the columns the pipeline
uses by their FOCUS names, keeps the rest of the file untouched, and takes the batch key from the ``Tags`` JSON
object (key ``batch_id`` unless configured). ``BilledCost`` feeds the cash book, ``EffectiveCost`` the resource
book; a restated line (``ChargeClass = Correction``) is kept as such.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from cost_pipeline.contract import schemas
from cost_pipeline.ingest.lib.records import ParsedFile, Rejection, RowRejected, csv_line_parser
from cost_pipeline.ingest.lib.source import LineParser, RowLoader, Source
from cost_pipeline.ingest.lib.timestamps import utc_naive

REQUIRED = ("ChargePeriodStart", "ChargePeriodEnd", "BilledCost", "EffectiveCost")
COLUMNS = {
    "BillingPeriodStart": "billing_period_start", "BillingPeriodEnd": "billing_period_end",
    "ChargePeriodStart": "charge_period_start", "ChargePeriodEnd": "charge_period_end",
    "ChargeCategory": "charge_category", "ChargeClass": "charge_class", "ChargeFrequency": "charge_frequency",
    "PricingCategory": "pricing_category", "BilledCost": "billed_cost", "EffectiveCost": "effective_cost",
    "ListCost": "list_cost", "ContractedCost": "contracted_cost", "BillingCurrency": "billing_currency",
    "ResourceId": "resource_id", "ResourceName": "resource_name", "ServiceName": "service_name",
    "ServiceCategory": "service_category", "InvoiceId": "invoice_id",
    "SkuId": "sku_id", "ConsumedQuantity": "consumed_quantity", "ConsumedUnit": "consumed_unit",
    "CommitmentDiscountId": "commitment_discount_id", "CommitmentDiscountStatus": "commitment_discount_status",
}
TIMESTAMPS = ("billing_period_start", "billing_period_end", "charge_period_start", "charge_period_end")


def _missing_as_none(value: object) -> object:
    """Exports write a missing value as an empty field or as the text ``null``."""
    return None if isinstance(value, str) and value.strip().lower() in ("", "null") else value


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


def focus_row(row: dict[str, object], tag_key: str) -> dict[str, object]:
    """One FOCUS line (by FOCUS column names) -> the raw billing shape; raises ``TagsError``."""
    mapped = {column: _missing_as_none(row.get(name)) for name, column in COLUMNS.items()}
    for column in TIMESTAMPS:
        mapped[column] = utc_naive(mapped[column])
    tags = row.get("Tags")
    mapped["tags"] = json.dumps(tags, sort_keys=True, default=str) if isinstance(tags, dict) else tags
    mapped["batch_id"] = batch_from_tags(row.get("Tags"), tag_key)
    return mapped


def focus_line_parser(tag_key: str = "batch_id") -> LineParser:
    read_csv = csv_line_parser(REQUIRED)

    def parse(lines: list[str], parsed: ParsedFile) -> None:
        read_csv(lines, parsed)
        kept = []
        for row in parsed.rows:
            try:
                kept.append(dict(focus_row(row, tag_key), source_line=row["source_line"]))
            except TagsError as error:
                parsed.rejections.append(Rejection(row["source_line"], error.rule, str(error)))
        parsed.rows[:] = kept

    return parse


@dataclass(frozen=True)
class FocusOptions:
    """Which key of the FOCUS ``Tags`` JSON object carries the batch key."""

    batch_tag_key: str = "batch_id"


SOURCES = (
    Source("billing_focus", ("I4",), "billing", ("*.csv", "*.parquet"), "FOCUS 1.x billing exports",
           RowLoader(schemas.billing_focus, lambda _schema, options: focus_line_parser(options.batch_tag_key),
                     parquet_row=lambda options: lambda row: focus_row(row, options.batch_tag_key)),
           options=FocusOptions),
)
