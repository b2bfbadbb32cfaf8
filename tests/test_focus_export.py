"""The FOCUS 1.2 export of the resource book (issue 11): every FOCUS 1.2 column in the spec's order plus x_ columns,
the spec's mandatory values, types and allowed values checked here, and BilledCost summing to fct_resource_book to
the cent. FinOps' focus-validator runs on the same export in tests/test_focus_validator.py, in an environment of its
own (docs/operations.md, "FOCUS export")."""

from __future__ import annotations

import csv
import re
import shutil
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from cost_pipeline.cli import main
from tests.helpers import append_demo_focus_lines, demo_focus_line, query

# Its module-scoped fixtures run once each: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("focus_export")

# FOCUS 1.2, specification/columns: the cost-and-usage columns, alphabetical as the spec lists them.
FOCUS_1_2 = """AvailabilityZone BilledCost BillingAccountId BillingAccountName BillingAccountType BillingCurrency
BillingPeriodEnd BillingPeriodStart CapacityReservationId CapacityReservationStatus ChargeCategory ChargeClass
ChargeDescription ChargeFrequency ChargePeriodEnd ChargePeriodStart CommitmentDiscountCategory CommitmentDiscountId
CommitmentDiscountName CommitmentDiscountQuantity CommitmentDiscountStatus CommitmentDiscountType CommitmentDiscountUnit
ConsumedQuantity ConsumedUnit ContractedCost ContractedUnitPrice EffectiveCost InvoiceId InvoiceIssuerName ListCost
ListUnitPrice PricingCategory PricingCurrency PricingCurrencyContractedUnitPrice PricingCurrencyEffectiveCost
PricingCurrencyListUnitPrice PricingQuantity PricingUnit ProviderName PublisherName RegionId RegionName ResourceId
ResourceName ResourceType ServiceCategory ServiceName ServiceSubcategory SkuId SkuMeter SkuPriceDetails SkuPriceId
SubAccountId SubAccountName SubAccountType Tags""".split()
# FOCUS 1.2: columns that MUST NOT be null.
NOT_NULL = """BilledCost BillingAccountId BillingCurrency BillingPeriodEnd BillingPeriodStart ChargeCategory
ChargeFrequency ChargePeriodEnd ChargePeriodStart ContractedCost EffectiveCost InvoiceIssuerName ListCost
PricingCurrency PricingCurrencyEffectiveCost ProviderName PublisherName ServiceCategory ServiceName
ServiceSubcategory""".split()
MONEY = ("BilledCost", "ContractedCost", "EffectiveCost", "ListCost", "PricingCurrencyEffectiveCost")
DECIMALS = MONEY + ("ConsumedQuantity", "PricingQuantity", "ContractedUnitPrice", "ListUnitPrice")
DATE_TIMES = ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd")
# FOCUS 1.2 allowed values (ChargeCategory, ChargeFrequency, ServiceCategory) and the subcategories of the one
# category the owned rows use; every category's "Other (<category>)" is a subcategory of it.
CHARGE_CATEGORIES = {"Usage", "Purchase", "Tax", "Credit", "Adjustment"}
CHARGE_FREQUENCIES = {"One-Time", "Recurring", "Usage-Based"}
SERVICE_CATEGORIES = {
    "AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases", "Developer Tools",
    "Multicloud", "Identity", "Integration", "Internet of Things", "Management and Governance", "Media", "Migration",
    "Mobile", "Networking", "Security", "Storage", "Web", "Other",
}  # fmt: skip
AI_SUBCATEGORIES = {"AI Platforms", "Bots", "Generative AI", "Machine Learning", "Natural Language Processing"}
NUMERIC = re.compile(r"^-?\d+(\.\d+)?$")  # NumericFormat, no exponent: what a Decimal prints
CENTS = re.compile(r"^-?\d+\.\d{2}$")
DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")  # DateTimeFormat, UTC
# UnitFormat: a count unit, or <unit>-<plural time unit>.
UNIT = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?: [A-Za-z][A-Za-z0-9]*)*(?:-(?:Hours|Days|Months|Years|Seconds|Minutes))?$")


@pytest.fixture(scope="module")
def warehouse(demo_run, tmp_path_factory) -> Path:
    """A copy of the session's demo warehouse: an export holds the warehouse's run lock, which would refuse another
    worker's command on the shared one (and be refused by it)."""
    assert demo_run.succeeded
    copied = tmp_path_factory.mktemp("focus-night") / "warehouse.duckdb"
    shutil.copyfile(demo_run.warehouse, copied)
    return copied


@pytest.fixture(scope="module")
def export(warehouse, tmp_path_factory) -> tuple[list[str], list[dict[str, str]], Path]:
    """The demo's resource book exported once as CSV and once as Parquet."""
    folder = tmp_path_factory.mktemp("focus")
    for name in ("book.csv", "book.parquet"):
        out = folder / name
        assert main(["export", "--focus", "--warehouse", str(warehouse), "--out", str(out)]) == 0
    with open(folder / "book.csv", encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        return list(reader.fieldnames or []), rows, folder / "book.parquet"


def test_columns_are_focus_1_2_then_x_columns(export):
    header, _, _ = export
    assert header[: len(FOCUS_1_2)] == FOCUS_1_2
    extra = header[len(FOCUS_1_2) :]
    assert {"x_BatchKey", "x_EvidenceLevel"} <= set(extra)
    assert all(column.startswith("x_") for column in extra)


def test_billed_cost_sums_to_the_resource_book_to_the_cent(export, warehouse):
    _, rows, _ = export
    book = query(warehouse, "select month, batch_id, resource_cost from marts.fct_resource_book")
    assert len(rows) == len(book)
    assert sum(Decimal(row["BilledCost"]) for row in rows) == sum(cost for _, _, cost in book)
    by_batch_month: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for month, batch, cost in book:
        by_batch_month[(f"{month:%Y-%m-%d}T00:00:00Z", batch)] += cost
    exported: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for row in rows:
        exported[(row["BillingPeriodStart"], row["x_BatchKey"])] += Decimal(row["BilledCost"])
    assert exported == by_batch_month


def test_mandatory_values_types_and_allowed_values(export, warehouse):
    _, rows, _ = export
    (currency,) = {c for (c,) in query(warehouse, "select distinct currency from marts.fct_resource_book")}
    for row in rows:
        assert [c for c in NOT_NULL if not row[c]] == [], row
        assert all(CENTS.match(row[c]) for c in MONEY), row
        assert all(NUMERIC.match(row[c]) for c in DECIMALS if row[c]), row
        assert all(DATE_TIME.match(row[c]) for c in DATE_TIMES), row
        assert row["BillingPeriodStart"] < row["BillingPeriodEnd"]
        assert row["BillingPeriodStart"] <= row["ChargePeriodStart"] < row["ChargePeriodEnd"] <= row["BillingPeriodEnd"]
        assert row["BillingCurrency"] == row["PricingCurrency"] == currency
        assert row["ChargeCategory"] in CHARGE_CATEGORIES and row["ChargeFrequency"] in CHARGE_FREQUENCIES
        assert row["ChargeClass"] in ("", "Correction")
        category, subcategory = row["ServiceCategory"], row["ServiceSubcategory"]
        assert category in SERVICE_CATEGORIES
        assert subcategory == f"Other ({category})" or (
            category == "AI and Machine Learning" and subcategory in AI_SUBCATEGORIES
        )
        assert row["EffectiveCost"] == row["ContractedCost"] == row["BilledCost"]  # usage without commitments
        # pairs the spec ties: a unit with its quantity, a type and name with the resource, nothing commitment-ish
        assert bool(row["ConsumedQuantity"]) == bool(row["ConsumedUnit"])
        assert bool(row["PricingQuantity"]) == bool(row["PricingUnit"])
        assert all(UNIT.match(row[c]) for c in ("ConsumedUnit", "PricingUnit") if row[c]), row
        assert bool(row["ResourceId"]) == bool(row["ResourceType"])
        assert row["ResourceId"] or not row["ResourceName"]
        assert not any(row[c] for c in FOCUS_1_2 if c.startswith(("CommitmentDiscount", "CapacityReservation")))
        assert not any(row[c] for c in ("SubAccountId", "SubAccountName", "SubAccountType"))


def test_batch_key_and_evidence_level(export):
    _, rows, _ = export
    assert {row["x_EvidenceLevel"] for row in rows if row["x_CostSource"] == "owned_capacity"} == {"measured"}
    (cloud_job,) = [row for row in rows if row["x_CostSource"] == "cloud_bill" and row["ResourceName"]]
    assert cloud_job["x_BatchKey"] == "B-10" and cloud_job["x_EvidenceLevel"] == "billed"
    assert cloud_job["ResourceId"] == "arn:aws:eks:us-east-1:123456789012:job/b10-eval-cloud"
    # 32 GPU-hours billed, 2 restated away; EffectiveCost 102.40 - 6.40; ListCost 171.37 - 10.71
    assert (cloud_job["ConsumedQuantity"], cloud_job["ConsumedUnit"]) == ("30.0000", "GPU-Hours")
    assert (cloud_job["BilledCost"], cloud_job["ListCost"]) == ("96.00", "160.66")
    assert cloud_job["InvoiceId"] == "INV-2026-11-0042" and cloud_job["x_HasCorrection"] == "true"
    # as the demo's AWS export names them (Data Exports write all three); owned GPU time is the organisation's own
    cloud = [row for row in rows if row["x_CostSource"] == "cloud_bill"]
    assert {(r["ProviderName"], r["PublisherName"], r["InvoiceIssuerName"]) for r in cloud} == {("AWS", "AWS", "AWS")}
    owned = {(r["ProviderName"], r["InvoiceIssuerName"]) for r in rows if r["x_CostSource"] == "owned_capacity"}
    assert owned == {("Owned GPU capacity", "Owned GPU capacity")}
    storage = [row for row in rows if row["ServiceName"] == "Amazon EBS"]
    assert [(row["PricingUnit"], row["ServiceCategory"]) for row in storage] == [("GB-Months", "Storage")]


def test_parquet_holds_the_same_rows_with_exact_types(export):
    _, rows, parquet = export
    table = pq.read_table(parquet)
    assert table.column_names == list(rows[0])
    assert str(table.schema.field("BilledCost").type) == "decimal128(18, 2)"
    assert str(table.schema.field("BillingPeriodStart").type) == "timestamp[us, tz=UTC]"
    assert sum(table.column("BilledCost").to_pylist()) == sum(Decimal(row["BilledCost"]) for row in rows)


def test_one_month_and_a_warehouse_without_the_book(warehouse, tmp_path, capsys):
    out = tmp_path / "october.csv"
    code = main(["export", "--focus", "--month", "2026-10", "--warehouse", str(warehouse), "--out", str(out)])
    assert code == 0
    assert out.read_text("utf-8").count("\n") == 1  # the header alone: the demo has no October
    assert "0 FOCUS 1.2 rows" in capsys.readouterr().out
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    assert main(["export", "--focus", "--warehouse", str(empty), "--out", str(tmp_path / "x.csv")]) == 10
    assert "no night has built marts.fct_resource_book" in capsys.readouterr().err


# The volume of B-10's cloud job (test_a_cloud_jobs_storage_line_...) and twenty S3 buckets of less than a cent
# tagged B-10 (test_the_books_agree_to_the_cent_...): two changes to the demo's FOCUS export, one night for both.
VOLUME = "arn:aws:ec2:us-east-1:123456789012:volume/b10-eval-cloud"


@dataclass(frozen=True)
class NextNight:
    warehouse: Path
    rows: list[dict[str, str]]  # the resource book exported after it


@pytest.fixture(scope="module")
def next_night(demo_run, tmp_path_factory) -> NextNight:
    """The demo's next night with its FOCUS export's first line copied twice over: once as a Storage line of 7.00
    naming B-10's cloud job's volume, and twenty times as an S3 bucket tagged B-10 at 0.005; then the resource book
    exported. The two are resources of their own, neither the job nor each other: each test checks its own, and the
    cloud bill's totals hold both (by hand, below)."""
    demo = demo_run.copy_to(tmp_path_factory.mktemp("focus-next-night") / "demo")
    landing, warehouse, out = demo / "landing", demo / "warehouse.duckdb", demo / "book.csv"
    volume = demo_focus_line(landing, VOLUME, amount="7.00").replace(
        ",Compute,Amazon EKS,SKU-AmazonEKS,32,GPU-Hours,", ",Storage,Amazon EBS,SKU-AmazonEBS,70,GB-Mo,"
    )
    assert VOLUME in volume and ",Storage,Amazon EBS," in volume
    tiny = [
        demo_focus_line(landing, f"arn:aws:s3:::b10-shard-{n}", amount="0.005", batch_tag="B-10").replace(
            ",Compute,Amazon EKS,SKU-AmazonEKS,32,GPU-Hours,", ",Storage,Amazon S3,SKU-AmazonS3,1,GB-Mo,"
        )
        for n in range(1, 21)
    ]
    assert all(",0.005,0.005,0.005,0.005," in line and ",Amazon S3," in line for line in tiny)
    append_demo_focus_lines(landing, volume, *tiny)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        assert main(["run", "--landing", str(landing), "--warehouse", str(warehouse)]) == 0
        assert main(["export", "--focus", "--warehouse", str(warehouse), "--out", str(out)]) == 0
    with open(out, encoding="utf-8", newline="") as handle:
        return NextNight(warehouse, list(csv.DictReader(handle)))


def test_a_cloud_jobs_storage_line_is_in_the_resource_book_and_the_export_as_a_resource_of_its_own(next_night):
    """A Storage line naming B-10's cloud job (its checkpoint volume, 7.00) was in neither the job's row (compute
    lines only) nor the other resources' (lines without a job): the cash book's November cloud bill was 7.00 more
    than the resource book's and the export's, and the job's exported row took the volume's ResourceId and
    category. Now it is a resource of its own, and the job's row is its compute lines'."""
    warehouse, rows = next_night.warehouse, next_night.rows
    ((cash,),) = query(
        warehouse, "select amount from marts.fct_cash_book where item = 'cloud_bill' and month = '2026-11-01'"
    )
    ((book,),) = query(
        warehouse,
        "select sum(resource_cost) from marts.fct_resource_book"
        " where cost_source = 'cloud_bill' and month = '2026-11-01'",
    )
    exported = sum(Decimal(r["BilledCost"]) for r in rows if r["ProviderName"] != "Owned GPU capacity")
    assert cash == book == exported
    (job,) = [r for r in rows if r["ResourceId"].endswith("job/b10-eval-cloud")]
    (storage,) = [r for r in rows if r["ResourceId"] == VOLUME]
    assert (job["ServiceCategory"], storage["ServiceCategory"], storage["BilledCost"]) == ("Compute", "Storage", "7.00")


def test_the_books_agree_to_the_cent_on_amounts_of_less_than_a_cent(next_night):
    """Twenty S3 buckets at 0.005 each, tagged B-10 (FOCUS amounts carry up to 18 decimals), 0.10 on the invoice.
    Each resource was rounded on its own (0.005 -> 0.01), so the books said 0.20 for them: the cash book's cloud bill
    142.20 where the invoice says 142.10 (at 0.004 each they were 0.00 and the money disappeared). Now an invoice's
    lines add up to its exact sum rounded once, each line its share by cumulative rounding in the order of what the
    books group lines by, and every book and the export sum those cents. The same night bills B-10's volume, 7.00 (a
    whole number of cents, which moves no share's rounding): the cloud bill is 142.10 + 7.00 = 149.10 (149.20 when
    each bucket is rounded on its own), B-10's billed cost 108.10 + 7.00 = 115.10."""
    warehouse, rows = next_night.warehouse, next_night.rows
    exported = sum(Decimal(r["BilledCost"]) for r in rows if r["x_EvidenceLevel"] != "measured")
    november = "month = '2026-11-01'"
    ((cash,),) = query(
        warehouse, f"select sum(amount) from marts.fct_cash_book where item = 'cloud_bill' and {november}"
    )
    ((lines,),) = query(warehouse, "select sum(amount) from marts.fct_cost_lines where cost_source = 'cloud_bill'")
    ((book,),) = query(
        warehouse,
        f"select sum(resource_cost) from marts.fct_resource_book where cost_source = 'cloud_bill' and {november}",
    )
    assert cash == lines == book == exported == Decimal("142.10") + Decimal("7.00")
    assert query(warehouse, "select billed_cost from marts.fct_batch_costs where batch_id = 'B-10'") == [
        (Decimal("108.10") + Decimal("7.00"),)
    ]
