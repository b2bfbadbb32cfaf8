"""Real FOCUS exports written by others (tests/data/focus, origin and licence in its README) load unedited: every
line staged or quarantined with a rule, the batch key read from Tags."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import shutil
from collections import Counter
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import dagster as dg
import duckdb

from cost_pipeline.defs.ingest import ASSETS_BY_TABLE
from cost_pipeline.defs.resources import LandingZone, Warehouse
from cost_pipeline.ingest.billing import focus_row
from cost_pipeline.source_summary import print_source_summary
from tests.helpers import query, staged_rows

SHARED_DATA = Path(__file__).resolve().parent / "data" / "focus"


def _landing(tmp_path: Path, folders: tuple[str, ...] = ("focus_spec", "openchargeback")) -> Path:
    files = sorted(path for folder in folders for path in (SHARED_DATA / folder).glob("*.csv"))
    assert files, f"expected the shared FOCUS exports in {SHARED_DATA}"
    landing = tmp_path / "landing"
    (landing / "billing").mkdir(parents=True)
    for path in files:
        shutil.copyfile(path, landing / "billing" / f"{path.parent.name}__{path.name}")
    return landing


def _materialize(landing: Path, warehouse: Path, tag_key: str = "batch_id") -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [ASSETS_BY_TABLE["billing_focus"]],
        instance=dg.DagsterInstance.ephemeral(),
        resources={"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))},
        run_config={"ops": {"raw__billing_focus": {"config": {"batch_tag_key": tag_key}}}},
    )


def test_shared_focus_exports_load_unedited(tmp_path):
    landing, warehouse = _landing(tmp_path), tmp_path / "w.duckdb"
    assert _materialize(landing, warehouse).success
    con = duckdb.connect(str(warehouse), read_only=True)
    ledger = con.execute(
        "select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files "
        "where source = 'billing_focus'"
    ).fetchall()
    quarantined = con.execute("select source_file, line, rule from raw.quarantine order by 1, 2").fetchall()
    totals = con.execute(
        "select sum(billed_cost), sum(effective_cost), count(*) from raw.billing_focus "
        "where source_file like 'billing/openchargeback__aws%'"
    ).fetchone()
    nulls = con.execute("select count(*) from raw.billing_focus where consumed_quantity is null").fetchone()[0]
    con.close()
    assert len(ledger) == 13
    assert all(rows_in == staged + bad for _, rows_in, staged, bad in ledger)
    # The FOCUS specification's own examples carry an impossible hour ("2023-02-01T30:00:00Z"): quarantined.
    assert quarantined == [
        ("billing/focus_spec__commitment_discount_purchase_scenario_2.csv", 4, "charge_period_end.iso_8601"),
        ("billing/focus_spec__commitment_discount_purchase_scenario_3.csv", 5, "charge_period_end.iso_8601"),
    ]
    with (SHARED_DATA / "openchargeback" / "aws_2025-01.csv").open(newline="", encoding="utf-8") as handle:
        lines = list(csv.DictReader(handle))
    assert totals == (
        sum(Decimal(r["BilledCost"]) for r in lines),
        sum(Decimal(r["EffectiveCost"]) for r in lines),
        len(lines),
    )
    assert nulls > 0  # "null" quantities are missing values, not errors


def test_the_batch_key_comes_from_a_configured_tag(tmp_path):
    landing, warehouse = _landing(tmp_path), tmp_path / "w.duckdb"
    assert _materialize(landing, warehouse, tag_key="project_id").success
    con = duckdb.connect(str(warehouse), read_only=True)
    keys = {
        k
        for (k,) in con.execute(
            "select distinct batch_id from raw.billing_focus where source_file like 'billing/openchargeback%'"
        ).fetchall()
    }
    con.close()
    assert "genomics-sequencing" in keys and None not in keys


def test_a_parquet_export_loads_like_its_csv(tmp_path):
    """The same FOCUS export as Parquet (Tags a JSON text column) stages the same lines, batch keys and amounts."""
    source = SHARED_DATA / "openchargeback" / "aws_2025-01.csv"
    landing = tmp_path / "landing"
    (landing / "billing").mkdir(parents=True)
    con = duckdb.connect()
    con.execute(
        "copy (select * from read_csv(?, header = true, all_varchar = true)) to ? (format parquet)",
        [str(source), str(landing / "billing" / "aws_2025-01.parquet")],
    )
    con.close()
    shutil.copyfile(source, landing / "billing" / "aws_2025-01.csv")
    warehouse = tmp_path / "w.duckdb"
    assert _materialize(landing, warehouse, tag_key="project_id").success
    con = duckdb.connect(str(warehouse), read_only=True)
    staged = {
        path: rows
        for path, rows in con.execute(
            "select source_file, list(struct_pack(source_line, batch_id, billed_cost, effective_cost, resource_id) "
            "order by source_line) from raw.billing_focus group by source_file"
        ).fetchall()
    }
    ledger = con.execute(
        "select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files order by 1"
    ).fetchall()
    con.close()
    csv_rows, parquet_rows = staged["billing/aws_2025-01.csv"], staged["billing/aws_2025-01.parquet"]
    # A CSV's line 1 is its header: its data lines are numbered from 2, the Parquet rows from 1.
    assert [dict(r, source_line=r["source_line"] - 1) for r in csv_rows] == parquet_rows
    assert {r["batch_id"] for r in parquet_rows} >= {"genomics-sequencing"}
    assert [(rows_in, staged_, bad) for _, rows_in, staged_, bad in ledger] == [(len(csv_rows), len(csv_rows), 0)] * 2


def test_a_gzipped_export_loads_like_its_csv_and_a_broken_one_is_quarantined_whole(tmp_path):
    """AWS Data Exports and Azure cost exports write FOCUS CSV gzipped by default (``part-00001.csv.gz``): it stages
    the lines its CSV does (it was not even read: listed as ignored, and its cost missing with exit 0). A ``.gz``
    that is not gzip is quarantined whole, with its rule."""
    source = SHARED_DATA / "openchargeback" / "aws_2025-01.csv"
    landing = tmp_path / "landing"
    (landing / "billing").mkdir(parents=True)
    shutil.copyfile(source, landing / "billing" / "aws_2025-01.csv")
    (landing / "billing" / "aws_2025-01_export.csv.gz").write_bytes(gzip.compress(source.read_bytes()))
    (landing / "billing" / "broken.csv.gz").write_bytes(b"not gzip: " + source.read_bytes())
    warehouse = tmp_path / "w.duckdb"
    assert _materialize(landing, warehouse, tag_key="project_id").success
    con = duckdb.connect(str(warehouse), read_only=True)
    staged = dict(
        con.execute(
            "select source_file, list(struct_pack(source_line, batch_id, billed_cost, effective_cost, resource_id) "
            "order by source_line) from raw.billing_focus group by source_file"
        ).fetchall()
    )
    quarantined = con.execute("select source_file, line, rule from raw.quarantine").fetchall()
    con.close()
    assert staged["billing/aws_2025-01_export.csv.gz"] == staged["billing/aws_2025-01.csv"]
    assert quarantined == [("billing/broken.csv.gz", 0, "file_compression")]


FINOPS_SAMPLE = SHARED_DATA / "finops_sample" / "focus_sample.csv"


def _ledger_and_quarantine(warehouse: Path) -> tuple[list[tuple], list[tuple]]:
    con = duckdb.connect(str(warehouse), read_only=True)
    ledger = con.execute(
        "select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files "
        "where source = 'billing_focus' order by 1"
    ).fetchall()
    quarantined = con.execute("select source_file, line, rule, message from raw.quarantine order by 1, 2").fetchall()
    con.close()
    return ledger, quarantined


def test_the_finops_foundation_sample_loads_unedited(tmp_path):
    """The FinOps Foundation's 1,000-line FOCUS sample, byte for byte: 11-decimal amounts kept exact, the text NULL
    a missing value (Tags included), its space-separated date-times read as ISO 8601 in UTC."""
    landing, warehouse = _landing(tmp_path, ("finops_sample",)), tmp_path / "w.duckdb"
    assert _materialize(landing, warehouse, tag_key="application").success
    ledger, quarantined = _ledger_and_quarantine(warehouse)
    with FINOPS_SAMPLE.open(newline="", encoding="utf-8") as handle:
        lines = list(csv.DictReader(handle))
    assert len(lines) == 1000
    [(_, rows_in, staged, bad)] = ledger
    assert rows_in == len(lines) == staged + bad
    assert staged == len(lines) and quarantined == []
    con = duckdb.connect(str(warehouse), read_only=True)
    sums = con.execute(
        "select sum(billed_cost), sum(effective_cost), sum(list_cost), sum(contracted_cost), "
        "count(contracted_cost), count(tags), count(batch_id), count(charge_class), "
        "min(charge_period_start), max(charge_period_end) from raw.billing_focus"
    ).fetchone()
    exact = con.execute(
        "select count(*) from raw.billing_focus where billed_cost = 0.00001605990 and source_line = 3"
    ).fetchone()[0]
    names = con.execute(
        "select provider_name, publisher_name, invoice_issuer_name, count(*) from raw.billing_focus group by all"
    ).fetchall()
    con.close()
    # who provides, publishes and invoices each line, as the file says (kept for the FOCUS export)
    expected = Counter((r["ProviderName"], r["PublisherName"], r["InvoiceIssuerName"]) for r in lines)
    assert {(p, pub, issuer): n for p, pub, issuer, n in names} == dict(expected)
    assert expected[("AWS", "Red Hat Inc.", "Amazon Web Services, Inc.")] == 1  # a marketplace line

    def total(column: str) -> Decimal:
        return sum(Decimal(r[column]) for r in lines if r[column] != "NULL")

    assert sums[:4] == (total("BilledCost"), total("EffectiveCost"), total("ListCost"), total("ContractedCost"))
    assert sums[4] == sum(r["ContractedCost"] != "NULL" for r in lines)
    assert sums[5] == sum(r["Tags"] != "NULL" for r in lines) > 0  # NULL Tags are missing, not bad JSON
    assert 0 < sums[6] < sums[5]  # the application tag, where it is set
    assert sums[7] == 0  # ChargeClass is NULL on every line
    assert str(sums[8]) == min(r["ChargePeriodStart"] for r in lines)
    assert str(sums[9]) == max(r["ChargePeriodEnd"] for r in lines)
    assert exact == 1


def _write_focus(landing: Path, rows: list[dict[str, str]]) -> None:
    (landing / "billing").mkdir(parents=True, exist_ok=True)
    with (landing / "billing" / "made.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _line(start: str, tags: str = "NULL", cost: str = "1.25") -> dict[str, str]:
    return {
        "ChargePeriodStart": start,
        "ChargePeriodEnd": "2026-12-01T00:00:00Z",
        "BilledCost": cost,
        "EffectiveCost": cost,
        "BillingCurrency": "USD",
        "Tags": tags,
    }


def test_a_date_time_that_is_not_iso_8601_is_quarantined_never_guessed(tmp_path):
    """Built from FOCUS's date-time format (ISO 8601, UTC): 01.04.2025 is not read as 4 January or 1 April, and a
    time in another zone is refused, not converted (2026-12-01T00:00:00+08:00 is a December bill's start in its
    provider's zone, and would be booked in November as the UTC instant)."""
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    starts = [
        "2026-11-30T00:00:00Z",
        "2026-11-30T00:00:00+00:00",
        "2026-11-30",
        "2026-11-30 00:00:00",
        "01.04.2025",
        "04/01/2025",
        "30 Nov 2026",
        "2026-11-31T00:00:00Z",
        "2026-12-01T00:00:00+08:00",
    ]
    _write_focus(landing, [_line(start) for start in starts])
    assert _materialize(landing, warehouse).success
    ledger, quarantined = _ledger_and_quarantine(warehouse)
    con = duckdb.connect(str(warehouse), read_only=True)
    staged = con.execute("select source_line, charge_period_start from raw.billing_focus order by 1").fetchall()
    con.close()
    assert [(line, str(at)) for line, at in staged] == [
        (2, "2026-11-30 00:00:00"),
        (3, "2026-11-30 00:00:00"),
        (4, "2026-11-30 00:00:00"),
        (5, "2026-11-30 00:00:00"),
    ]
    assert [(line, rule) for _, line, rule, _ in quarantined] == [
        *((line, "charge_period_start.iso_8601") for line in (6, 7, 8, 9)),
        (10, "charge_period_start.utc"),
    ]
    assert all("an ISO 8601 date-time such as 2026-11-30T00:00:00Z" in message for *_, message in quarantined[:4])
    assert "offset +08:00" in quarantined[4][3]
    assert all("01.04.2025" not in message for *_, message in quarantined)  # the value stays out of the message
    assert ledger[0][1:] == (9, 4, 5)


def test_null_tags_are_missing_and_tags_of_any_size_load(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    big = json.dumps({"batch_id": "b-large", "notes": "x" * 300_000})  # past the csv module's 128 KiB default
    _write_focus(
        landing,
        [_line("2026-11-30T00:00:00Z", tags) for tags in ("NULL", "null", "", big)]
        + [_line("2026-11-30T00:00:00Z", cost=cost) for cost in ("0.00000080000", "1.6E-05", "12,5")],
    )
    assert _materialize(landing, warehouse).success
    _, quarantined = _ledger_and_quarantine(warehouse)
    con = duckdb.connect(str(warehouse), read_only=True)
    staged = con.execute(
        "select source_line, tags is null, batch_id, length(tags), cast(billed_cost as varchar) "
        "from raw.billing_focus order by 1"
    ).fetchall()
    con.close()
    assert [(line, rule) for _, line, rule, _ in quarantined] == [(8, "billed_cost.amount")]
    assert "an amount such as 12.3456" in quarantined[0][3]
    assert [row[:3] for row in staged[:4]] == [(2, True, None), (3, True, None), (4, True, None), (5, False, "b-large")]
    assert staged[3][3] == len(big)
    assert [Decimal(row[4]) for row in staged[4:]] == [Decimal("0.0000008"), Decimal("0.000016")]


def test_the_finops_sample_as_parquet_with_double_amounts_stages_the_same_amounts(tmp_path):
    """Parquet exports write amounts as doubles: each is read as its shortest decimal text, so the FinOps sample
    written as Parquet (DOUBLE amounts, TIMESTAMP periods, real nulls) stages the same amounts as its CSV."""
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "billing").mkdir(parents=True)
    con = duckdb.connect()
    con.execute(
        "copy (select * from read_csv(?, header = true, nullstr = 'NULL')) to ? (format parquet)",
        [str(FINOPS_SAMPLE), str(landing / "billing" / "focus_sample.parquet")],
    )
    types = dict(
        con.execute(
            "select column_name, column_type from (describe select * from read_parquet(?))",
            [str(landing / "billing" / "focus_sample.parquet")],
        ).fetchall()
    )
    con.close()
    assert types["BilledCost"] == "DOUBLE" and types["ChargePeriodStart"] == "TIMESTAMP"
    shutil.copyfile(FINOPS_SAMPLE, landing / "billing" / "focus_sample.csv")
    assert _materialize(landing, warehouse, tag_key="application").success
    ledger, quarantined = _ledger_and_quarantine(warehouse)
    con = duckdb.connect(str(warehouse), read_only=True)
    staged = con.execute(
        "select source_file, list(row(billed_cost, effective_cost, list_cost, contracted_cost, "
        "charge_period_start, tags is null, batch_id) order by source_line) from raw.billing_focus "
        "group by source_file order by 1"
    ).fetchall()
    con.close()
    assert quarantined == [] and [row[1:] for row in ledger] == [(1000, 1000, 0)] * 2
    (_, csv_rows), (_, parquet_rows) = staged
    assert parquet_rows == csv_rows


def test_focus_1_2_service_provider_name_wins_over_the_deprecated_provider_name():
    line = {
        "ChargePeriodStart": "2026-11-01T00:00:00Z",
        "ChargePeriodEnd": "2026-11-02T00:00:00Z",
        "BilledCost": "1.00",
        "EffectiveCost": "1.00",
        "ProviderName": "Old Name",
        "ServiceProviderName": "Example Cloud",
        "PublisherName": "NULL",
    }
    row = focus_row(line, "batch_id")
    assert (row["provider_name"], row["publisher_name"], row["invoice_issuer_name"]) == ("Example Cloud", None, None)
    assert focus_row({**line, "ServiceProviderName": ""}, "batch_id")["provider_name"] == "Old Name"


def test_ids_in_a_double_parquet_column_are_their_whole_numbers_and_a_fraction_is_quarantined(tmp_path):
    """pandas writes an integer column with nulls as a double: a Parquet ResourceId of 1001.0 was the text '1001.0'
    and never matched sacct job 1001 (a 50.00 Compute line unattributed instead of B-7's), and a BillingAccountId of
    123456789012.0 was not the account of the same month's CSV export, so the two no longer deduplicated. A whole
    number is its integer's text, as telemetry's job_id (rule job_id.whole_number); a fraction, NaN or an infinity
    names nothing: quarantined, the rule naming the column."""
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "billing").mkdir(parents=True)
    export = landing / "billing" / "focus.parquet"
    ids = [
        ("123456789012.0", "null", "1001.0"),
        ("123456789012.0", "7.0", "null"),
        ("123456789012.0", "null", "1001.5"),
        ("'nan'", "null", "1001.0"),
        ("123456789012.0", "'inf'", "1001.0"),
    ]
    rows = " union all ".join(
        f"select cast({account} as double) as BillingAccountId, cast({sub} as double) as SubAccountId, "
        f"cast({resource} as double) as ResourceId, timestamp '2026-11-10' as ChargePeriodStart, "
        "timestamp '2026-11-11' as ChargePeriodEnd, 50.0 as BilledCost, 50.0 as EffectiveCost, "
        f"'Compute' as ServiceCategory, {n} as n"
        for n, (account, sub, resource) in enumerate(ids)
    )
    con = duckdb.connect()
    con.execute(f"copy (select * exclude (n) from ({rows}) order by n) to '{export}' (format parquet)")
    assert con.execute(f"select typeof(ResourceId) from '{export}' limit 1").fetchone() == ("DOUBLE",)
    con.close()

    assert _materialize(landing, warehouse).success

    ledger, quarantined = _ledger_and_quarantine(warehouse)
    con = duckdb.connect(str(warehouse), read_only=True)
    raw = con.execute(
        "select source_line, billing_account_id, sub_account_id, resource_id from raw.billing_focus order by 1"
    ).fetchall()
    con.close()
    assert raw == [(1, "123456789012", None, "1001"), (2, "123456789012", "7", None)]
    assert [row[1:] for row in ledger] == [(5, 2, 3)]
    assert [row[1:3] for row in quarantined] == [
        (3, "resource_id.whole_number"),
        (4, "billing_account_id.whole_number"),
        (5, "sub_account_id.whole_number"),
    ]


FOCUS_HEADER = (
    "BillingAccountId,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,"
    "BilledCost,EffectiveCost,ResourceId"
)
NOVEMBER = "2026-11-01T00:00:00Z,2026-12-01T00:00:00Z"


def _focus_lines(account: str, *charges: tuple[str, str]) -> list[str]:
    """A FOCUS CSV of ``account``'s November lines: (resource, amount) each, on 3 November."""
    return [FOCUS_HEADER] + [
        f"{account},{NOVEMBER},2026-11-03T00:00:00Z,2026-11-04T00:00:00Z,Usage,{amount},{amount},{resource}"
        for resource, amount in charges
    ]


AWS = "billing/focus-export"  # an AWS Data Exports export as S3 holds it: data/ and metadata/ per billing period
AWS_DATA = f"{AWS}/data/BILLING_PERIOD=2026-11"


def _aws_manifest(execution: str, *names: str) -> list[str]:
    """An AWS Data Exports manifest of one execution listing ``names`` (as s3:// URIs of the execution's folder), in
    the fields AWS documents: no time of the run."""
    prefix = f"s3://cur-bucket/{AWS_DATA.removeprefix('billing/')}/{execution}"
    return [
        json.dumps(
            {
                "executionId": execution,
                "exportArn": "arn:aws:bcm-data-exports:us-east-1:123456789012:export/focus-export-1234",
                "columns": [{"name": "BilledCost", "type": "decimal"}],
                "dataFiles": [f"{prefix}/{name}" for name in names],
                "additionalOutputFiles": [],
            }
        )
    ]


def _aws_run(execution: str, parts: dict[str, list[str]], listed: int | None = None) -> dict[str, list[str]]:
    """One AWS execution's landing files: its data files in its folder, its manifest under metadata/ (none when
    ``listed`` is 0; listing ``listed`` parts when more than are delivered)."""
    files = {f"{AWS_DATA}/{execution}/{name}": lines for name, lines in parts.items()}
    names = [f"focus-export-{n:05d}.csv" for n in range(1, (listed or len(parts)) + 1)]
    if listed != 0:
        files[f"{AWS}/metadata/BILLING_PERIOD=2026-11/{execution}/focus-export-Manifest.json"] = _aws_manifest(
            execution, *names
        )
    return files


def _azure_manifest(run: str, submitted: str, *names: str) -> list[str]:
    """An Azure Cost Management export manifest of one run listing ``names`` as blobs."""
    return [
        json.dumps(
            {
                "blobCount": len(names),
                "exportConfig": {"exportName": "focus", "type": "FocusCost", "dataVersion": "1.0r2"},
                "runInfo": {
                    "executionType": "Scheduled",
                    "submittedTime": submitted,
                    "runId": run,
                    "startDate": "2026-11-01T00:00:00",
                    "endDate": "2026-11-30T00:00:00",
                },
                "blobs": [{"blobName": f"exports/focus/20261101-20261130/{run}/{n}", "byteCount": 1} for n in names],
            }
        )
    ]


def _billed(rows: list[dict]) -> dict[tuple[str, str], Decimal]:
    counted = Counter()
    for row in rows:
        counted[(row["billing_account_id"], row["resource_id"])] += Decimal(str(row["billed_cost"]))
    return dict(counted)


def test_the_newest_complete_export_run_replaces_older_runs_of_its_account_and_period(tmp_path):
    """A FOCUS export refreshed during an open month writes each run into its own folder with a manifest: a later run
    revising a line's amount counted beside the older run's line (12.00 + 10.00), and two AWS runs (whose manifests
    give no time) both counted. Now one run of an account and billing period counts: the newest complete one, runs
    loaded the same night by manifest path; a newer run still missing a part, or whose manifest has not come,
    replaces nothing; files no manifest lists are counted as before (each file's lines, identical lines once)."""
    part = "focus-export-{:05d}.csv".format
    azure = "billing/azure/20261101-20261130"
    files = {
        **_aws_run(
            "exec-1",
            {
                part(1): _focus_lines("111", ("vm-a", "10.00"), ("vm-b", "5.00")),
                part(2): _focus_lines("111", ("vm-f", "2.00")),
            },
        ),
        # the refresh revises vm-a; its second part is byte for byte the first run's, and still the newer run's
        **_aws_run(
            "exec-2",
            {
                part(1): _focus_lines("111", ("vm-a", "12.00"), ("vm-b", "5.00")),
                part(2): _focus_lines("111", ("vm-f", "2.00")),
            },
        ),
        # a newer run, its second part not delivered yet: replaces nothing
        **_aws_run("exec-3", {part(1): _focus_lines("111", ("vm-a", "99.00"))}, listed=2),
        # a run whose manifest has not come (AWS writes it after the data): held, replaces nothing
        **_aws_run("exec-4", {part(1): _focus_lines("111", ("vm-a", "50.00"))}, listed=0),
        # Azure: the newer run by runInfo.submittedTime, whatever the folders' names say
        f"{azure}/run-z/part_0_0001.csv": _focus_lines("222", ("vm-c", "3.00")),
        f"{azure}/run-z/manifest.json": _azure_manifest("run-z", "2026-11-04T18:33:03.1032074Z", "part_0_0001.csv"),
        f"{azure}/run-a/part_0_0001.csv": _focus_lines("222", ("vm-c", "4.50")),
        f"{azure}/run-a/manifest.json": _azure_manifest("run-a", "2026-11-05T18:33:03.1032074Z", "part_0_0001.csv"),
        # no manifest: each file's lines count, identical lines once
        "billing/plain_1.csv": _focus_lines("333", ("vm-d", "7.00"), ("vm-e", "1.00")),
        "billing/plain_2.csv": _focus_lines("333", ("vm-d", "8.00"), ("vm-e", "1.00")),
    }
    rows = staged_rows(tmp_path, "billing_focus", files, "stg_billing__focus_charges")
    assert _billed(rows) == {
        ("111", "vm-a"): Decimal("12.00"),
        ("111", "vm-b"): Decimal("5.00"),
        ("111", "vm-f"): Decimal("2.00"),
        ("222", "vm-c"): Decimal("4.50"),
        ("333", "vm-d"): Decimal("15.00"),
        ("333", "vm-e"): Decimal("1.00"),
    }
    # the night's summary names the run still missing a file, and the run folder without a manifest
    summary = io.StringIO()
    print_source_summary(tmp_path / "warehouse.duckdb", out=summary)
    assert "incomplete: FOCUS export run exec-3 lists 2 data file(s), 1 loaded" in summary.getvalue()
    assert f"incomplete: FOCUS export run folder {AWS_DATA}/exec-4 has no manifest, 1 loaded" in summary.getvalue()
    # raw is append-only: every run's lines are kept there
    assert {r[0] for r in query(tmp_path / "warehouse.duckdb", "select export_run_id from raw.billing_focus")} == {
        "exec-1",
        "exec-2",
        "exec-3",
        f"{AWS_DATA}/exec-4",
        "run-z",
        "run-a",
        None,
    }


def _nights(tmp_path, *nights: dict[str, list[str]]) -> list[dict]:
    """stg_billing__focus_charges after one load a night, each adding its files to the landing folder (its arrivals
    recorded a day after the last's)."""
    from cost_pipeline.contract import load_contract
    from cost_pipeline.ingest.lib.arrivals import record_arrivals
    from cost_pipeline.ingest.lib.warehouse import connect
    from cost_pipeline.ingest.registry import load_named
    from tests.helpers import dbt_show_model

    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    for night, files in enumerate(nights, start=1):
        for name, lines in files.items():
            (landing / name).parent.mkdir(parents=True, exist_ok=True)
            (landing / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        con = connect(warehouse, readable_dir=landing)
        try:
            assert load_named(con, landing, "billing_focus", load_contract()).conserved
            record_arrivals(con, "billing_focus", now=datetime(2026, 11, night, 2))
        finally:
            con.close()
    return dbt_show_model(tmp_path, "stg_billing__focus_charges", {**os.environ, "COST_WAREHOUSE": str(warehouse)})


def test_aws_export_runs_are_ordered_by_arrival_and_an_incomplete_newer_run_leaves_the_older(tmp_path):
    """AWS manifests give no time of their run: the run that arrived later is the newer, whatever its id (AWS's
    execution ids do not sort by time). Night 1 loads run 'f7…' (vm-a 10.00); night 2 run '0a…' revising vm-a to
    12.00 and a third run '00…' still missing its second part. Counted: 12.00 once (main counted every run's
    line: 10.00 + 12.00 + 99.00). Runs first loaded the same night are ordered by manifest path."""
    part = "focus-export-{:05d}.csv".format
    rows = _nights(
        tmp_path,
        _aws_run("f7-exec", {part(1): _focus_lines("111", ("vm-a", "10.00"), ("vm-b", "5.00"))}),
        {
            **_aws_run("0a-exec", {part(1): _focus_lines("111", ("vm-a", "12.00"), ("vm-b", "5.00"))}),
            **_aws_run("00-exec", {part(1): _focus_lines("111", ("vm-a", "99.00"))}, listed=2),
            # two complete runs of another account first loaded the same night: the later by manifest path counts
            **_aws_run("b-exec", {part(1): _focus_lines("444", ("vm-g", "2.00"))}),
            **_aws_run("a-exec", {part(1): _focus_lines("444", ("vm-g", "1.00"))}),
        },
    )
    assert _billed(rows) == {
        ("111", "vm-a"): Decimal("12.00"),
        ("111", "vm-b"): Decimal("5.00"),
        ("444", "vm-g"): Decimal("2.00"),
    }
