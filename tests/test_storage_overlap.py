"""A bucket billed in a FOCUS export and priced from an S3 inventory in the same month is counted twice in the batch
costs; the warn test storage_billed_and_inventoried lists it, kept in the audit schema (issue 3's open overlap)."""

from __future__ import annotations

import csv
import shutil
from decimal import Decimal

from cost_pipeline.cli import run_pipeline
from tests.helpers import query


def test_a_bucket_billed_and_inventoried_in_one_month_is_listed(demo_run, tmp_path):
    landing = tmp_path / "landing"
    shutil.copytree(demo_run.landing, landing)
    with (landing / "billing" / "aws_focus_2026-11.csv").open(encoding="utf-8", newline="") as demo:
        header, first = list(csv.reader(demo))[:2]
    line = dict(zip(header, first, strict=True)) | {
        "ResourceId": "arn:aws:s3:::ml-prod",
        "ResourceName": "ml-prod",
        "ServiceCategory": "Storage",
        "ServiceName": "Amazon S3",
        "ChargeClass": "",
        "ListCost": "41.00",
        "ContractedCost": "41.00",
        "BilledCost": "41.00",
        "EffectiveCost": "41.00",
        "ConsumedUnit": "GB-Mo",
        "Tags": "",
    }
    with (landing / "billing" / "aws_focus_s3_2026-11.csv").open("w", encoding="utf-8", newline="") as bill:
        writer = csv.writer(bill)
        writer.writerow(header)
        writer.writerow([line[name] for name in header])
    warehouse = tmp_path / "warehouse.duckdb"

    assert run_pipeline(landing, warehouse), "an overlap is a warning, not a failed night"

    listed = query(
        warehouse,
        "select month_start, bucket, resource_id, billed_effective_cost, source_file "
        "from audit.storage_billed_and_inventoried",
    )
    assert [row[1:] for row in listed] == [
        ("ml-prod", "arn:aws:s3:::ml-prod", Decimal("41.00"), "billing/aws_focus_s3_2026-11.csv")
    ]
    # The demo itself bills no inventoried bucket (its FOCUS storage line is an EBS volume).
    assert demo_run.query("select count(*) from audit.storage_billed_and_inventoried") == [(0,)]
