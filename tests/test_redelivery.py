"""Exports delivered again, overlapping, or month to date (R16): every record counts once, and the night goes on.

The file ledger stops the same bytes under a new name; these are other bytes with the same records: a sacct export
that saw a job running and the next one that saw it end, a request log or a FOCUS bill shipped again, a Harvest
report exported month to date. raw keeps every delivery (nothing is lost); staging reads each record once.

A whole night costs the same whatever its data: tests whose changes are independent (each a named function touching
its own source or batch, none moving another's figures) share one, built once for the module (its fixtures below).
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.cli import HELD_EXIT
from cost_pipeline.contract import load_contract
from cost_pipeline.fingerprint import table_fingerprints
from cost_pipeline.ingest.lib.records import file_sha256
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_named
from cost_pipeline.retract import retract
from tests.helpers import (
    Night,
    cli_night,
    dbt_show_model,
    dbt_target,
    partial_night,
    query,
    staged_rows,
)

# Its module-scoped nights run once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("redelivery")

# Every file a night may see again with its records unchanged (text formats: a re-export differs in its bytes).
REDELIVERED = [
    # records and lines
    "billing/aws_focus_2026-11.csv",
    "requests/requests_2026-11.jsonl",
    "scheduler/cloud_events_2026-11.jsonl",
    "scheduler/sacct_2026-11.txt",
    "services/invoices_2026-11.csv",
    "steps/steps.jsonl",
    "telemetry/dcgm_b7.csv",
    "timesheets/harvest_time_report_2026-11.csv",
    "storage/ml-prod_inventory_2026-11-23.csv",
    # reference files, exported whole again
    "ledger/facility.csv",
    "ledger/purchases.csv",
    "registry/batches.csv",
    "registry/rounds.csv",
    "serving/monthly_costs.csv",
    "serving/replicas.csv",
    "storage/prefix_rules.csv",
    "storage/storage_prices.csv",
    "tasks/outcomes.csv",
]


def _deliver_again(landing: Path, relative: str, suffix: str) -> Path:
    """A copy of a landing file under another name, other bytes (a trailing blank line), the same records."""
    path = landing / relative
    again = path.with_name(f"{path.stem}{suffix}{path.suffix}")
    again.write_bytes(path.read_bytes() + b"\n")
    return again


def _running_export(sacct: Path, job_id: str) -> Path:
    """An earlier sacct export that saw ``job_id`` still running: End Unknown, the Elapsed time so far."""
    header, *rows = sacct.read_text(encoding="utf-8").splitlines()
    names = header.split("|")
    row = next(r.split("|") for r in rows if r.split("|")[0] == job_id)
    row[names.index("State")] = "RUNNING"
    row[names.index("End")] = "Unknown"
    row[names.index("Elapsed")] = "00:30:00"
    earlier = sacct.with_name("sacct_2026-11-01_partial.txt")
    earlier.write_text("\n".join([header, "|".join(row)]) + "\n", encoding="utf-8")
    return earlier


def _every_file_delivered_again(landing: Path) -> None:
    """Every source: each file of REDELIVERED again under another name, and an earlier sacct export that saw job 1001
    still running."""
    for relative in REDELIVERED:
        _deliver_again(landing, relative, "_again")
    _running_export(landing / "scheduler" / "sacct_2026-11.txt", "1001")


def test_records_delivered_twice_count_once(demo_run, neutral_night):
    warehouse = neutral_night.warehouse

    assert neutral_night.code == 0, "a re-delivered export must not stop the night: " + neutral_night.err

    # Every mart as on the clean demo; the cost history also records which files fed a figure (more files here).
    clean, again = table_fingerprints(demo_run.warehouse), table_fingerprints(warehouse)
    assert len(again) == len(clean) >= 13
    assert {t: h for t, h in again.items() if t != "fct_batch_cost_history"} == {
        t: h for t, h in clean.items() if t != "fct_batch_cost_history"
    }
    figures = (
        "select batch_id, snapshot_version, total_cost, compute_cost, labour_cost from marts.fct_batch_cost_history"
    )
    assert demo_run.query(figures + " order by 1, 2") == query(warehouse, figures + " order by 1, 2")


def _fresh_night(demo_run, root: Path, *changes: Callable[[Path], object]) -> Night:
    """The demo's landing copied under ``root``, each change made to it, then one ``cost-pipeline run`` on a new
    warehouse (every file arrives that night: which is newer is said by its path)."""
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    for change in changes:
        change(landing)
    return cli_night(landing, warehouse)


def _job_1001_seen_running(landing: Path) -> None:
    """The scheduler: an earlier sacct export that saw job 1001 still running."""
    _running_export(landing / "scheduler" / "sacct_2026-11.txt", "1001")


def _focus_invoiced_again_and_a_line_twice(landing: Path) -> None:
    """The bill: the month's FOCUS export again, once invoiced (the same lines with their InvoiceId filled in anew),
    and an export repeating its first line within itself (the second copy is a charge of its own)."""
    focus = landing / "billing" / "aws_focus_2026-11.csv"
    month = focus.read_text(encoding="utf-8")
    assert month.count("INV-2026-11-0042") == 5
    (landing / "billing" / "aws_focus_2026-11_again.csv").write_text(
        month.replace("INV-2026-11-0042", "INV-2026-11-FINAL"), encoding="utf-8"
    )
    header, first, *_ = month.splitlines()
    (landing / "billing" / "aws_focus_2026-11_twice.csv").write_text(
        "\n".join([header, first, first]) + "\n", encoding="utf-8"
    )


def _b8_budget_raised_a_month_later(landing: Path) -> None:
    """The registry exported whole again a month later, with B-8's budget raised from 400.00 to 500.00."""
    registry = (landing / "registry" / "batches.csv").read_text(encoding="utf-8")
    assert registry.count(",400.00,") == 1
    (landing / "registry" / "batches_2026-12.csv").write_text(
        registry.replace(",400.00,", ",500.00,"), encoding="utf-8"
    )


@pytest.fixture(scope="module")
def newer_records_night(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Night:
    """Newer records of the scheduler (job 1001), the bill, the registry (B-8's budget), B-8's timesheets (Dmitri's
    evaluation rework) and the facility and serving ledgers (November's final exports): one source each, no change
    moving the figures another test of this night asserts."""
    return _fresh_night(
        demo_run,
        tmp_path_factory.mktemp("newer_records"),
        _job_1001_seen_running,
        _focus_invoiced_again_and_a_line_twice,
        _b8_budget_raised_a_month_later,
        _dmitri_s_rework_corrected_in_a_b8_report,
        _november_s_ledgers_exported_again_corrected,
    )


def test_raw_keeps_every_delivery_and_the_newest_record_wins(newer_records_night):
    # Job 1001 seen running, the bill invoiced again and a line twice, B-8's budget raised: the changes above.
    warehouse = newer_records_night.warehouse
    assert newer_records_night.code == 0, newer_records_night.err

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        # Both accountings of job 1001 are in raw; the finished one is the job.
        assert con.execute("select state from raw.scheduler_jobs where job_id = '1001' order by state").fetchall() == [
            ("COMPLETED",),
            ("RUNNING",),
        ]
        assert (
            con.execute("select state, end_at from intermediate.int_jobs_attributed where job_id = '1001'").fetchall()
            == con.execute(
                "select state, end_at from raw.scheduler_jobs where job_id = '1001' and state = 'COMPLETED'"
            ).fetchall()
        )
        # FOCUS: 5 lines + 5 invoiced again + 2 copies of the first line in one file = 12 in raw. Staging: the 5
        # lines, and the first line's second copy within the one file (a charge of its own).
        assert con.execute("select count(*) from raw.billing_focus").fetchone() == (12,)
        assert con.execute("select count(*) from staging.stg_billing__focus_charges").fetchone() == (6,)
        # The invoiced export is newer than the month's first (one night's files: by path): its four other lines carry
        # the new id.
        assert con.execute(
            "select count(*) from staging.stg_billing__focus_charges where invoice_id = 'INV-2026-11-FINAL'"
        ).fetchone() == (4,)
        # The newest registry file (one night's files: by name) holds each batch's registration.
        assert con.execute(
            "select batch_id, budget_cost from raw.batch_registry where batch_id = 'B-8' order by source_file"
        ).fetchall() == [("B-8", Decimal("400.00")), ("B-8", Decimal("500.00"))]
        assert con.execute("select budget_cost from marts.fct_batch_budget where batch_id = 'B-8'").fetchall() == [
            (Decimal("500.00"),)
        ]
    finally:
        con.close()


def _b7_scrape_again_under_long_host_names(landing: Path) -> None:
    """Telemetry: B-7's scrape exported again by a collector that names hosts in full (GPU-A.cluster.example)."""
    scrape = landing / "telemetry" / "dcgm_b7.csv"
    header, *rows = scrape.read_text(encoding="utf-8").splitlines()
    assert header.split(",")[1] == "hostname"
    renamed = []
    for row in rows:
        fields = row.split(",")
        fields[1] = f"{fields[1].upper()}.cluster.example"
        renamed.append(",".join(fields))
    (landing / "telemetry" / "dcgm_b7_fqdn.csv").write_text("\n".join([header, *renamed]) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def neutral_night(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Night:
    """Deliveries that change no figure: every file again under another name (every source), B-7's scrape again
    under the hosts' long names (telemetry) and an older month-to-date Harvest report (timesheets). Each test of this
    night compares every mart with the clean demo's, so any of these changes, counted wrong, fails it."""
    return _fresh_night(
        demo_run,
        tmp_path_factory.mktemp("neutral"),
        _every_file_delivered_again,
        _b7_scrape_again_under_long_host_names,
        _older_month_to_date_export,
    )


def _marts_but_history(warehouse: Path) -> dict[str, str]:
    """Each mart's fingerprint but the cost history's (which also records the files that fed a figure)."""
    return {t: h for t, h in table_fingerprints(warehouse).items() if t != "fct_batch_cost_history"}


def test_device_samples_delivered_again_under_the_host_s_long_name_count_once(demo_run, neutral_night):
    """A scrape exported again by a collector that names hosts in full (GPU-A.cluster.example for gpu-a) holds the
    same samples: each GPU instant counts once, as a window over one GPU sees it under both names (it partitioned by
    the name as spelled, so every figure of B-7's jobs counted twice: effective compute, energy, idle GPU-hours)."""
    warehouse = neutral_night.warehouse
    assert neutral_night.code == 0, neutral_night.err

    assert _marts_but_history(warehouse) == _marts_but_history(demo_run.warehouse)
    spellings = "select count(distinct reported_hostname) from staging.stg_telemetry__device_samples"
    assert query(warehouse, spellings) == [(2 * query(demo_run.warehouse, spellings)[0][0],)]


def _harvest_export(source: Path, name: str, keep, edit=lambda row: row, extra=()) -> None:
    """Another Harvest export beside ``source``: the entries ``keep`` selects, each through ``edit``, then ``extra``
    (rows as dicts of Harvest's columns)."""
    with source.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        header, rows = reader.fieldnames, list(reader)
    with (source.parent / name).open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, header)
        writer.writeheader()
        writer.writerows([edit(dict(row)) for row in rows if keep(row)] + list(extra))


def _labour(warehouse: Path) -> dict[str, Decimal]:
    return dict(query(warehouse, "select batch_id, labour_cost from marts.fct_batch_costs"))


def _older_month_to_date_export(landing: Path) -> None:
    """Timesheets: a report exported on the 5th, before Alice's 2 November entry was corrected from 7 to 6 hours and
    her 4 November entry deleted."""
    month = landing / "timesheets" / "harvest_time_report_2026-11.csv"

    def corrected_later(row: dict) -> dict:
        if (row["Date"], row["First Name"], row["Task"]) == ("2026-11-02", "Alice", "Data preparation"):
            row.update({"Hours": "7", "Hours Rounded": "7", "Cost Amount": "840.00"})
        return row

    with month.open(encoding="utf-8", newline="") as handle:
        alice = next(row for row in csv.DictReader(handle) if row["First Name"] == "Alice")
    deleted = {**alice, "Date": "2026-11-04", "Task": "Training runs", "Hours": "2", "Cost Amount": "240.00"}
    _harvest_export(
        month, "harvest_time_report_2026-11-05.csv", lambda row: row["Date"] <= "2026-11-05", corrected_later, [deleted]
    )


def test_an_older_month_to_date_export_counts_only_where_the_newer_one_does_not_reach(demo_run, neutral_night):
    """A report exported on the 5th, before Alice's 2 November entry was corrected from 7 to 6 hours and her 4
    November entry deleted: the month's report (newer by its name) says what those days' entries are now, so labour
    is the clean demo's (each was another line, and both counted: B-7's labour 1,080.00 too high)."""
    warehouse = neutral_night.warehouse
    assert neutral_night.code == 0, neutral_night.err

    assert _labour(warehouse) == _labour(demo_run.warehouse)
    assert _marts_but_history(warehouse) == _marts_but_history(demo_run.warehouse)


def _dmitri_s_rework_corrected_in_a_b8_report(landing: Path) -> None:
    """Timesheets: a report filtered to project B-8, exported after Dmitri's evaluation rework was corrected from 2 to
    3 hours."""

    def corrected(row: dict) -> dict:
        if (row["First Name"], row["Task"]) == ("Dmitri", "Evaluation rework"):
            row.update({"Hours": "3", "Hours Rounded": "3", "Cost Amount": "270.00"})
        return row

    month = landing / "timesheets" / "harvest_time_report_2026-11.csv"
    _harvest_export(month, "harvest_time_report_2026-11_b8.csv", lambda row: row["Project Code"] == "B-8", corrected)


def test_a_newer_export_filtered_to_one_project_replaces_only_that_project_s_entries(demo_run, newer_records_night):
    """A report filtered to project B-8, exported after Dmitri's evaluation rework was corrected from 2 to 3 hours:
    B-8's labour takes the hour (90.00 an hour), and B-7's and the platform's entries, which that report does not
    cover, stay as the month's report says."""
    warehouse = newer_records_night.warehouse
    assert newer_records_night.code == 0, newer_records_night.err

    clean = _labour(demo_run.warehouse)
    assert _labour(warehouse) == {**clean, "B-8": clean["B-8"] + Decimal("90.00")}


def _labour_and_hours(warehouse: Path) -> dict[str, tuple[Decimal, Decimal]]:
    return {b: (cost, hours) for b, cost, hours in query(warehouse, _BATCH_LABOUR)}


_BATCH_LABOUR = "select batch_id, labour_cost, labour_hours from marts.fct_batch_costs order by batch_id"


# Dmitri's edited report: it sorts after the month's report and arrives after it (held_night runs after the demo's):
# newer either way.
_MISTYPED = "timesheets/harvest_time_report_2026-11_b8.csv"


def _dmitri_s_rework_mistyped_in_a_b8_report(landing: Path) -> None:
    """Timesheets: a report filtered to project B-8, exported after Dmitri's evaluation rework, his only entry in it,
    was edited to "-3" hours."""

    def mistyped(row: dict) -> dict:
        if (row["First Name"], row["Task"]) == ("Dmitri", "Evaluation rework"):
            row.update({"Hours": "-3", "Hours Rounded": "-3", "Cost Amount": "-270.00"})
        return row

    month = landing / "timesheets" / "harvest_time_report_2026-11.csv"
    _harvest_export(month, Path(_MISTYPED).name, lambda row: row["Project Code"] == "B-8", mistyped)


def _but(figures: dict, batch: str) -> dict:
    """``figures`` by batch without ``batch``'s (another change of the same night moves it; its own test asserts it)."""
    return {b: figure for b, figure in figures.items() if b != batch}


_MONTH = "timesheets/harvest_time_report_2026-11.csv"
# Chloe's older report: it sorts before the month's report, and its arrival is set a day before the demo's files.
_CHLOE_OLDER = "timesheets/harvest_time_report_2026-11-05.csv"


def _chloe_s_entry_in_an_older_report(landing: Path) -> None:
    """B-7's timesheets: an older report saying Chloe worked 4 hours on 3 November (the month's report says 5)."""

    def earlier(row: dict) -> dict:
        row.update({"Hours": "4", "Hours Rounded": "4"})
        return row

    _harvest_export(landing / _MONTH, Path(_CHLOE_OLDER).name, lambda row: row["First Name"] == "Chloe", earlier)


@dataclass(frozen=True)
class HeldNight:
    """The night after the demo's with Chloe's line held, and the raw line of hers that the tamper changed."""

    night: Night
    chloe_s_line: int


@pytest.fixture(scope="module")
def held_night(demo_run, tmp_path_factory: pytest.TempPathFactory) -> HeldNight:
    """On a copy of the demo: Chloe's hours in an older report and her month's line tampered so that it is held
    (B-7's timesheets), Dmitri's mistyped edit (B-8's timesheets, quarantined by the contract, not held) and a second
    account's support line (the bill): each its own batch or source, no change moving the figures another test of
    this night asserts (the labour tests compare every batch but the other's)."""
    root = tmp_path_factory.mktemp("held")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    shutil.copy2(demo_run.warehouse, warehouse)
    for change in (
        _chloe_s_entry_in_an_older_report,
        _dmitri_s_rework_mistyped_in_a_b8_report,
        _a_second_account_s_support_line,
    ):
        change(landing)
    ((line,),) = query(warehouse, "select source_line from raw.timesheets where first_name = 'Chloe'")
    night = cli_night(
        landing,
        warehouse,
        [
            f"update raw.timesheets set task = 'Bogus task' where source_file = '{_MONTH}' and first_name = 'Chloe'",
            f"insert into ops.file_arrivals select 'timesheets', '{file_sha256(landing / _CHLOE_OLDER)}', "
            "min(first_seen_at) - interval 1 day from ops.file_arrivals",
        ],
    )
    return HeldNight(night, line)


def _held_only_chloe_s_line(held: HeldNight) -> None:
    """The night held Chloe's line alone (another test's change, asserted there): it built and published the marts."""
    assert held.night.code == HELD_EXIT, held.night.out + held.night.err
    assert query(
        held.night.warehouse, "select source_file, line from raw.quarantine where starts_with(rule, 'dbt:')"
    ) == [(_MONTH, held.chloe_s_line)]


def test_a_newer_export_s_quarantined_edit_still_replaces_the_older_entry(demo_run, held_night):
    """A report filtered to project B-8, exported after Dmitri's evaluation rework (2 hours, 180.00, on 7 November: the
    month's report) was edited, his only entry in it, whose hours are written "-3": the contract quarantines it. The
    newer report still covers Dmitri (its first to last date x people x projects x tasks is what the file says, not
    what passed the contract), so the older entry it replaced counts no more, and the quarantined one nowhere. Before,
    the newer report's box was read from raw, without Dmitri, and his 2 superseded hours counted: B-8 920.00 over 9.
    B-8 by hand: Alice 4 h x 120 + Eva 2 h assumed at 90 + Farah 1 h x 80 = 740.00 over 7 hours (the demo: 920.00 over
    9, with Dmitri's 2 h x 90)."""
    warehouse, newer = held_night.night.warehouse, _MISTYPED
    _held_only_chloe_s_line(held_night)

    clean = _labour_and_hours(demo_run.warehouse)
    assert clean["B-8"] == (Decimal("920.00"), Decimal("9"))
    # B-7: Chloe's held line (test_a_newer_export_s_held_entry_still_replaces_the_older_one).
    assert _but(_labour_and_hours(warehouse), "B-7") == _but({**clean, "B-8": (Decimal("740.00"), Decimal("7"))}, "B-7")
    # Alice, Eva, Dmitri, Farah: Dmitri's line 4 is in the quarantine, with its rule; rows in = staged + quarantined.
    assert query(warehouse, "select source, line, rule from raw.quarantine where source_file = ?", [newer]) == [
        ("timesheets", 4, "hours.hours_of_a_day")
    ]
    assert query(
        warehouse,
        "select rows_in, rows_staged, rows_quarantined from raw.ingested_files where source_file = ?",
        [newer],
    ) == [(4, 3, 1)]
    assert query(warehouse, "select count(*) from raw.timesheets where source_file = ?", [newer]) == [(3,)]


def test_a_newer_export_s_held_entry_still_replaces_the_older_one(demo_run, held_night):
    """An older report (its bytes arrived before the month's: ops.file_arrivals says so, as if an earlier night had
    seen it) says Chloe worked 4 hours on B-7 on 3 November; the month's report says 5, her only entry in it, and that
    line fails a staging test (its task changed in raw behind the contract's back) and is held. The month's report
    still covers Chloe, so her older 4 hours count no more, and the held 5 nowhere. Before, the month's box was read
    from raw without Chloe: holding her line would bring the older one back, so the hold was refused and the night
    failed. B-7 by hand: the demo's 4,230.28 over 33.5 hours less Chloe's 5 hours assumed at 100.00 = 3,730.28 over
    28.5."""
    night, warehouse = held_night.night, held_night.night.warehouse

    assert night.code == HELD_EXIT, night.out + night.err
    assert query(warehouse, "select source_file, line from raw.quarantine where starts_with(rule, 'dbt:')") == [
        (_MONTH, held_night.chloe_s_line)
    ]
    clean = _labour_and_hours(demo_run.warehouse)
    assert clean["B-7"] == (Decimal("4230.28"), Decimal("33.5"))
    # B-8: Dmitri's mistyped edit (test_a_newer_export_s_quarantined_edit_still_replaces_the_older_entry).
    assert _but(_labour_and_hours(warehouse), "B-8") == _but(
        {**clean, "B-7": (Decimal("3730.28"), Decimal("28.5"))}, "B-8"
    )


def test_a_person_s_day_over_24_hours_is_priced_nowhere_in_one_export_or_across_two(demo_run, tmp_path):
    """No entry is over 24 hours, but a day of one person is. In the month's report Alice books 20 hours of B-8 training
    runs on 3 November beside her 8 + 4 hours on B-7 that day: 32 hours, all priced before (B-8's labour 920.00 ->
    3,320.00, exit 0). The contract now quarantines the three entries (rule hours_of_a_person_day, file and line each).
    A newer report filtered to PLATFORM says Farah spent 24 hours coordinating on 7 November, beside her 1 hour on B-8
    that day in the month's report, which the newer one does not cover (another project): 25 hours across two exports
    after staging has chosen between them, so the staging test holds both entries and the night says so.
    By hand: B-7 is the demo's 4,230.28 over 33.5 hours less Alice's 12 h x 120.00 = 2,790.28 over 21.5; B-8 the demo's
    920.00 over 9 less Farah's 1 h x 80.00 = 840.00 over 8."""
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    shutil.copy2(demo_run.warehouse, warehouse)
    month = "timesheets/harvest_time_report_2026-11.csv"
    newer = "timesheets/harvest_time_report_2026-11_platform.csv"  # sorts after the month's report: newer
    with (landing / month).open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    alice = next(row for row in rows if row["First Name"] == "Alice")
    farah = next(row for row in rows if row["First Name"] == "Farah" and row["Project Code"] == "PLATFORM")
    booked = {"Project Code": "B-8", "Task": "Training runs", "Hours": "20", "Hours Rounded": "20"}
    _harvest_export(
        landing / month, Path(month).name, lambda row: True, extra=[{**alice, "Date": "2026-11-03", **booked}]
    )
    coordinating = {**farah, "Date": "2026-11-07", "Hours": "24", "Hours Rounded": "24", "Cost Amount": "1920.00"}
    _harvest_export(
        landing / month, Path(newer).name, lambda row: row["Project Code"] == "PLATFORM", extra=[coordinating]
    )

    night = cli_night(landing, warehouse)

    assert night.code == HELD_EXIT, night.out + night.err
    # Alice's 3 November entries are lines 3 and 4 of the month's report and the appended 14; Farah's B-8 hour line 12.
    assert query(
        warehouse,
        "select source_file, line, rule from raw.quarantine where source = 'timesheets' order by source_file, line",
    ) == [
        (month, 3, "hours_of_a_person_day"),
        (month, 4, "hours_of_a_person_day"),
        (month, 12, "dbt:sum_at_most_stg_timesheets__entries_24__hours__entry_date__person_key"),
        (month, 14, "hours_of_a_person_day"),
        (newer, 3, "dbt:sum_at_most_stg_timesheets__entries_24__hours__entry_date__person_key"),
    ]
    assert query(
        warehouse,
        "select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files "
        "where source = 'timesheets' order by source_file",
    ) == [(month, 13, 9, 4), (newer, 2, 1, 1)]
    clean = _labour_and_hours(demo_run.warehouse)
    assert (clean["B-7"], clean["B-8"]) == ((Decimal("4230.28"), Decimal("33.5")), (Decimal("920.00"), Decimal("9")))
    assert _labour_and_hours(warehouse) == {
        **clean,
        "B-7": (Decimal("2790.28"), Decimal("21.5")),
        "B-8": (Decimal("840.00"), Decimal("8")),
    }


HARVEST_HEADER = "Date,Project Code,Task,Hours,First Name,Last Name,Cost Rate,Currency"


def test_a_newer_export_that_writes_a_name_another_way_replaces_the_older_one_s_entries(tmp_path):
    """stg_timesheets__entries on two hand-made Harvest exports. The older (05) says Alice Zhang worked 8 hours on
    2 November and 7 on 3 November, Zoé Müller 5 on 3 November (B-7), Ben Okafor 2 on 1 November, and Alice 17
    on B-8 on 3 November. The newer (30), filtered to B-7, writes the same people another way: "alice" "ZHANG"
    8 hours on 2 November (the same entry), full-width "Ａｌｉｃｅ" "Zhang" 8 on 3 November (edited from 7),
    "Zoe" + U+0301 "Mu" + U+0308 "ller" (accents decomposed) 5. The newer export's box matches people by person_key:
    it replaces Alice's and Zoé's older B-7 entries, and B-7's labour is the newer export's hours x rate,
    16 h x 120.00 + 5 h x 90.00 = 2,370.00, with Ben's 2 h x 100.00 outside the box (1 November): 2,570.00. Before,
    the box compared raw names: none of the older entries was covered, and B-7 counted 4,820.00 over 43 hours (Alice's
    and Zoé's hours twice), exit 0. Alice's B-8 17 hours (another project, outside the box) stay, and her 3
    November is 8 + 17 = 25 hours across the two exports: the staging test sum_at_most, by person_key, fails on both
    entries (before, "Ａｌｉｃｅ Zhang" and "Alice Zhang" were two people of 8 and 24 hours)."""
    older = [
        "2026-11-02,B-7,Training runs,8,Alice,Zhang,120.00,USD",
        "2026-11-03,B-7,Training runs,7,Alice,Zhang,120.00,USD",
        "2026-11-03,B-7,Data preparation,5,Zo\u00e9,M\u00fcller,90.00,USD",
        "2026-11-01,B-7,Data preparation,2,Ben,Okafor,100.00,USD",
        "2026-11-03,B-8,Training runs,17,Alice,Zhang,120.00,USD",
    ]
    newer = [
        "2026-11-02,B-7,Training runs,8,alice,ZHANG,120.00,USD",
        "2026-11-03,B-7,Training runs,8,\uff21\uff4c\uff49\uff43\uff45,Zhang,120.00,USD",
        "2026-11-03,B-7,Data preparation,5,Zoe\u0301,Mu\u0308ller,90.00,USD",
    ]
    landing = tmp_path / "landing"
    (landing / "timesheets").mkdir(parents=True)
    for name, lines in (("harvest_time_report_2026-11-05.csv", older), ("harvest_time_report_2026-11-30.csv", newer)):
        (landing / "timesheets" / name).write_text("\n".join([HARVEST_HEADER, *lines]) + "\n", encoding="utf-8")
    warehouse = tmp_path / "warehouse.duckdb"
    con = connect(warehouse, readable_dir=landing)
    try:
        report = load_named(con, landing, "timesheets", load_contract())
    finally:
        con.close()
    assert report.conserved and query(warehouse, "select count(*) from raw.quarantine") == [(0,)]

    from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, warehouse_folder_dbt_executable

    # The staging model and its tests but the contract's enumeration (its tables are not in this warehouse).
    built = subprocess.run(
        [warehouse_folder_dbt_executable(), "build", "--select", "stg_timesheets__entries"]
        + ["--exclude", "test_name:in_contract_enumeration", "--store-failures"]
        + ["--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR)]
        + ["--target-path", str(dbt_target(tmp_path, warehouse)), "--log-path", str(tmp_path / "logs")],
        cwd=DBT_PROJECT_DIR,
        env={**os.environ, "COST_WAREHOUSE": str(warehouse)},
        capture_output=True,
        text=True,
    )

    staged = query(
        warehouse,
        "select project_code, source_file, source_line, hours, cost_rate from staging.stg_timesheets__entries "
        "order by source_file, source_line",
    )
    old, new = "timesheets/harvest_time_report_2026-11-05.csv", "timesheets/harvest_time_report_2026-11-30.csv"
    assert [(project, file, line) for project, file, line, _, _ in staged] == [
        ("B-7", old, 5),
        ("B-8", old, 6),
        ("B-7", new, 2),
        ("B-7", new, 3),
        ("B-7", new, 4),
    ]
    b7 = sum(hours * rate for project, _, _, hours, rate in staged if project == "B-7")
    assert (b7, sum(hours for project, _, _, hours, _ in staged if project == "B-7")) == (
        Decimal("2570.00"),
        Decimal("23"),
    )
    assert built.returncode == 1, built.stdout
    # The test's failing rows, stored under its name cut and hashed (dbt names a relation in at most 63 characters).
    ((failures,),) = query(
        warehouse,
        "select table_name from information_schema.tables where table_schema = 'audit' "
        "and starts_with(table_name, 'sum_at_most_stg_timesheets__en')",
    )
    assert query(warehouse, f"select source_file, source_line, group_total from audit.{failures} order by all") == [
        (old, 6, Decimal("25")),
        (new, 3, Decimal("25")),
    ]


def _a_second_account_s_support_line(landing: Path) -> None:
    """The bill: a second AWS account's export holding a support plan line like the first account's."""
    bill = landing / "billing" / "aws_focus_2026-11.csv"
    header, *lines = bill.read_text(encoding="utf-8").splitlines()
    (support,) = [line for line in lines if ",Support plan," in line]
    assert support.startswith("123456789012,")
    (landing / "billing" / "aws_focus_acct2_2026-11.csv").write_text(
        "\n".join([header, support.replace("123456789012,", "210987654321,", 1)]) + "\n", encoding="utf-8"
    )


def test_two_accounts_lines_alike_in_every_other_column_are_two_charges(demo_run, held_night):
    """A second AWS account's export holds a support plan line like the first account's (29.00, no resource): the
    lines were matched as one delivered twice, and the cash book's cloud bill was 142.00 instead of 171.00."""
    warehouse = held_night.night.warehouse
    _held_only_chloe_s_line(held_night)

    cloud = "select amount, lines from marts.fct_cash_book where item = 'cloud_bill' and month = '2026-11-01'"
    ((amount, count),) = query(demo_run.warehouse, cloud)
    assert query(warehouse, cloud) == [(amount + Decimal("29.00"), count + 1)]


# The nights after the demo's (later_nights) and the files their changes write.
_EDITED = "timesheets/harvest_time_report_2026-11b.csv"
_DISCARDS = "steps/discards-2026-11-17.jsonl"
_REVISION = "registry/batches-2026-11-20.csv"
# An upgraded warehouse: raw's FOCUS rows as loaded before the account ids were kept.
_ACCOUNT_IDS_NOT_KEPT = "update raw.billing_focus set billing_account_id = null, sub_account_id = null"


@dataclass(frozen=True)
class LaterNights:
    """Nights after the demo's on one copy of it, each with a copy of the warehouse as it left it; and the rows each
    retraction between them took out of raw."""

    nights: tuple[Night, ...]
    retracted: list[int]


def _as_left(night: Night, copy: Path) -> Night:
    """``night`` with a copy of its warehouse as it left it (the nights after it change the warehouse)."""
    shutil.copyfile(night.warehouse, copy)
    log = night.warehouse.with_name(f"{night.warehouse.name}.wal")
    if log.exists():
        shutil.copyfile(log, copy.with_name(f"{copy.name}.wal"))
    return replace(night, warehouse=copy)


# The raw assets of the sources the later nights change: a night after a change to some of them runs only theirs and
# every asset of the nightly job downstream of them (the rest reads nothing the change touches).
_BILL, _TIMESHEETS, _STEPS, _REGISTRY = (
    ("raw", "billing_focus"),
    ("raw", "timesheets"),
    ("raw", "training_steps"),
    ("raw", "batch_registry"),
)
# What the tests read after each later night: the batch costs and publishing; downstream of each night's changed
# sources (``partial_night``'s covering), so built again by all three.
_READ = ("marts/fct_batch_costs", "published/marts")


@pytest.fixture(scope="module")
def later_nights(demo_run, tmp_path_factory: pytest.TempPathFactory) -> LaterNights:
    """Three nights after the demo's, on a copy of it; each change to its own source or batch, none moving the figures
    another test of these nights asserts. Night 1: the bill's export again with account ids, raw's rows without (B-10),
    Alice's B-7 Training runs edited in a newer Harvest export, B-8's steps restated, B-10's budget revised. Night 2:
    the edited export and the restated steps gone from the landing folder, the edited export's extent deleted from raw.
    Night 3: the restated steps retracted before it. Each night runs the sources it changes and what is downstream of
    them (``partial_night``, their models and marts, the history snapshots, publishing)."""
    root = demo_run.copy_to(tmp_path_factory.mktemp("later") / "demo")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    for change in (
        _account_ids_kept_only_by_the_next_export,
        _alice_s_training_runs_edited_in_a_newer_export,
        _b8_steps_restated_in_a_file_named_before_the_demo_s,
        _b10_budget_revised_in_a_file_named_before_the_demo_s,
    ):
        change(landing)
    changed = [_BILL, _TIMESHEETS, _STEPS, _REGISTRY]
    first = _as_left(
        partial_night(landing, warehouse, changed, (_ACCOUNT_IDS_NOT_KEPT,), covering=_READ), root / "night1.duckdb"
    )

    (landing / _EDITED).unlink()
    (landing / _DISCARDS).unlink()
    extent_not_recorded = f"delete from raw.timesheets_extent where source_file = '{_EDITED}'"
    second = _as_left(
        partial_night(landing, warehouse, [_TIMESHEETS, _STEPS], (extent_not_recorded,), covering=_READ),
        root / "night2.duckdb",
    )

    retracted = [r.rows for r in retract(warehouse, _DISCARDS, "restated the wrong steps", by="tests")]
    third = _as_left(partial_night(landing, warehouse, [_STEPS], covering=_READ), root / "night3.duckdb")
    return LaterNights((first, second, third), retracted)


def _account_ids_kept_only_by_the_next_export(landing: Path) -> None:
    """The bill: the month's export gone from the landing folder, the next export repeating its five lines in another
    order (other bytes, not a move) with the account id (the night's tamper nulls it in raw's rows)."""
    export = landing / "billing" / "aws_focus_2026-11.csv"
    header, *lines = export.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 5 and all(line.startswith("123456789012,") for line in lines)
    export.unlink()
    (landing / "billing" / "aws_focus_2026-11_v2.csv").write_text(
        "\n".join([header, *reversed(lines)]) + "\n", encoding="utf-8"
    )


def test_lines_loaded_before_account_ids_were_kept_are_superseded_by_a_later_export_of_them(later_nights):
    """An upgraded warehouse: its FOCUS rows were loaded before BillingAccountId/SubAccountId were kept (null in raw)
    and their export is gone from the landing folder (raw keeps its rows as loaded). The month's next export repeats
    its five lines (in another order: other bytes, not a move) with the account id. Compared with the account ids,
    old and new lines differed and both counted: B-10's cloud compute was 192.00. Now the export supersedes the old
    rows: B-10's compute is 102.40 - 6.40 = 96.00 and its storage 12.00 (108.00 billed), and the month's cloud bill
    102.40 - 6.40 + 12.00 + 29.00 + 5.00 = 142.00 in 5 lines, as on the demo."""
    night = later_nights.nights[0]
    warehouse = night.warehouse

    assert night.code == 0, night.err
    assert query(
        warehouse,
        "select source_file, count(*), count(billing_account_id) from raw.billing_focus group by 1 order by 1",
    ) == [("billing/aws_focus_2026-11.csv", 5, 0), ("billing/aws_focus_2026-11_v2.csv", 5, 5)]
    assert query(
        warehouse,
        "select batch_id, compute_cost, storage_cost, billed_cost from marts.fct_batch_costs where batch_id = 'B-10'",
    ) == [("B-10", Decimal("96.00"), Decimal("12.00"), Decimal("108.00"))]
    cloud = "select amount, lines from marts.fct_cash_book where item = 'cloud_bill' and month = '2026-11-01'"
    assert query(warehouse, cloud) == [(Decimal("142.00"), 5)]


def test_a_line_without_account_ids_matches_a_later_line_with_any_and_two_accounts_stay_two(tmp_path):
    """stg_billing__focus_charges on hand-made exports: a.csv carries no account ids (as lines loaded before they were
    kept); b.csv, later, the same lines with them, its support fee once per account (two lines alike but for the
    account); c.csv and d.csv one fee each of two accounts. a.csv's two fees are b.csv's two (its n-th copy matched
    to b.csv's n-th), its compute line b.csv's; its notebook line, in no later export, stays; c.csv's and d.csv's
    fees are two charges."""
    head = "BillingAccountId,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,BilledCost,EffectiveCost,ResourceId"
    fee, compute, notebook = (
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Usage,29.00,29.00,",
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Usage,102.40,102.40,job/b10",
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Usage,5.00,5.00,i-0nb99",
    )
    other_fee = "2026-11-03T00:00:00Z,2026-11-04T00:00:00Z,Usage,7.00,7.00,"
    files = {
        "billing/a.csv": [head.split(",", 1)[1], fee, fee, compute, notebook],
        "billing/b.csv": [head, f"222,{fee}", f"111,{fee}", f"111,{compute}"],
        "billing/c.csv": [head, f"111,{other_fee}"],
        "billing/d.csv": [head, f"222,{other_fee}"],
    }
    staged = staged_rows(tmp_path, "billing_focus", files, "stg_billing__focus_charges")

    assert sorted(
        (row["source_file"], row["source_line"], row["billing_account_id"], Decimal(str(row["billed_cost"])))
        for row in staged
    ) == [
        ("billing/a.csv", 5, None, Decimal("5.00")),
        ("billing/b.csv", 2, "222", Decimal("29.00")),
        ("billing/b.csv", 3, "111", Decimal("29.00")),
        ("billing/b.csv", 4, "111", Decimal("102.40")),
        ("billing/c.csv", 2, "111", Decimal("7.00")),
        ("billing/d.csv", 2, "222", Decimal("7.00")),
    ]


def test_an_export_without_optional_columns_repeats_the_lines_of_one_with_them(tmp_path):
    """FOCUS allows any subset of optional columns: the demo's export again without ListCost and ContractedCost (null
    in raw) differed from the first in those and counted every line twice (the cash book 142.00 -> 284.00). A column
    a file does not have is unknown: b.csv's lines are a.csv's, equal in every column both have; its two notebook
    lines of 5.00 are a.csv's two (list costs 8.00 and 9.00 in a.csv), and c.csv's (7.00) is a charge of its own
    (its file has the column, its value another); b.csv's volume vol-2, in no other file, stays; d.csv's job line
    lacks the columns too and differs from a.csv's in its amount, a column both have: two charges."""
    full = "BillingAccountId,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ListCost,ContractedCost,BilledCost,"
    full += "EffectiveCost,ResourceId"
    less = full.replace("ListCost,ContractedCost,", "")
    period = "111,2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Usage"
    files = {
        "billing/a.csv": [
            full,
            f"{period},171.37,171.37,102.40,102.40,job/b10",
            f"{period},12.00,12.00,12.00,12.00,vol-1",
            f"{period},8.00,8.00,5.00,5.00,i-1",
            f"{period},9.00,9.00,5.00,5.00,i-1",
        ],
        "billing/b.csv": [
            less,
            f"{period},5.00,5.00,i-1",
            f"{period},102.40,102.40,job/b10",
            f"{period},5.00,5.00,i-1",
            f"{period},12.00,12.00,vol-1",
            f"{period},3.00,3.00,vol-2",
        ],
        "billing/c.csv": [full, f"{period},7.00,7.00,5.00,5.00,i-1"],
        "billing/d.csv": [less, f"{period},102.41,102.41,job/b10"],
    }
    staged = staged_rows(tmp_path, "billing_focus", files, "stg_billing__focus_charges")

    def money(value: object) -> Decimal | None:
        return None if value is None else Decimal(str(value))

    assert sorted(
        ((row["resource_id"], money(row["billed_cost"]), money(row["list_cost"])) for row in staged), key=str
    ) == [
        ("i-1", Decimal("5.00"), Decimal("7.00")),
        ("i-1", Decimal("5.00"), Decimal("8.00")),
        ("i-1", Decimal("5.00"), Decimal("9.00")),
        ("job/b10", Decimal("102.40"), Decimal("171.37")),
        ("job/b10", Decimal("102.41"), None),
        ("vol-1", Decimal("12.00"), Decimal("12.00")),
        ("vol-2", Decimal("3.00"), None),
    ]


def _november_s_ledgers_exported_again_corrected(landing: Path) -> None:
    """The facility and serving ledgers: a final export of November's each, in a file of its own beside the first,
    correcting power (1,152.00 -> 1,200.00) and operations (2,000.00 -> 2,100.00)."""
    (landing / "ledger" / "facility_2026-11_final.csv").write_text(
        "month,item,amount,currency\n2026-11,power,1200.00,USD\n", encoding="utf-8"
    )
    (landing / "serving" / "monthly_costs_2026-11_final.csv").write_text(
        "month,item,amount\n2026-11,operations,2100.00\n", encoding="utf-8"
    )


def test_a_corrected_ledger_re_export_replaces_the_month_s_item_not_adds_to_it(newer_records_night):
    """Ledger lines carry no id. A final export of November's facility ledger corrects power (1,152.00 -> 1,200.00)
    and the serving ledger's operations (2,000.00 -> 2,100.00), each in a file of its own beside the first: the
    newest file holding a month's item says what it cost. Counted both, November's facility cost was 4,656.00 and
    the serving month's other costs 7,600.00."""
    night = newer_records_night
    warehouse = night.warehouse
    assert night.code == 0, night.err
    # 2,016.00 rent + 1,200.00 power + 288.00 network; October untouched.
    assert query(warehouse, "select month_start, facility_cost from marts.fct_gpu_hour_price order by 1") == [
        (date(2026, 10, 1), Decimal("3456.00")),
        (date(2026, 11, 1), Decimal("3504.00")),
    ]
    # 1,200 + 800 + 1,500 + 2,100 = 5,600.00, shared by GPU-hours 5,760 : 1,440 = 4,480.00 : 1,120.00.
    assert query(warehouse, "select model, other_cost from marts.fct_service_month order by model") == [
        ("assistant-large", Decimal("4480.00")),
        ("assistant-small", Decimal("1120.00")),
    ]


def test_a_ledger_re_export_writing_the_month_as_its_first_day_replaces_the_month_s_item(tmp_path):
    """The contract's month is `2026-11` or `2026-11-01`. A final export writing November as `2026-11-01` beside the
    first (`2026-11`) is the same month's item, superseded by the newer file as any re-export: grouped on the raw text
    it was a cell of its own, and November's power (1,152.00) and operations (2,000.00) counted twice."""
    landing = tmp_path / "landing"
    files = {
        "ledger/facility.csv": "month,item,amount,currency\n2026-11,power,1152.00,USD\n2026-10,power,1100.00,USD\n",
        "ledger/facility_2026-11_final.csv": "month,item,amount,currency\n2026-11-01,power,1152.00,USD\n",
        "serving/monthly_costs.csv": "month,item,amount\n2026-11,operations,2000.00\n",
        "serving/monthly_costs_final.csv": "month,item,amount\n2026-11-01,operations,2000.00\n",
    }
    for name, text in files.items():
        (landing / name).parent.mkdir(parents=True, exist_ok=True)
        (landing / name).write_text(text, encoding="utf-8")
    warehouse = tmp_path / "warehouse.duckdb"
    con = connect(warehouse, readable_dir=landing)
    try:
        for source in ("ledger_facility", "serving_monthly_costs"):
            assert load_named(con, landing, source, load_contract()).conserved
    finally:
        con.close()
    env = {**os.environ, "COST_WAREHOUSE": str(warehouse)}

    def cells(model: str) -> list[tuple[str, str, str, Decimal]]:
        rows = dbt_show_model(tmp_path / model, model, env)
        return sorted((str(r["cost_month"]), r["item"], r["source_file"], Decimal(str(r["amount"]))) for r in rows)

    assert cells("stg_ledger__facility_costs") == [
        ("2026-10-01", "power", "ledger/facility.csv", Decimal("1100.00")),
        ("2026-11-01", "power", "ledger/facility_2026-11_final.csv", Decimal("1152.00")),
    ]
    assert cells("stg_serving__monthly_costs") == [
        ("2026-11-01", "operations", "serving/monthly_costs_final.csv", Decimal("2000.00")),
    ]


# Alice's Training runs of 3 November in the demo's Harvest export: 8 hours at 120.00.
_ALICE_S_TRAINING_RUNS = (
    "2026-11-03,Internal,assistant-rl,B-7,Training runs,,8,8,No,No,Yes,Alice,Chen,ML Engineer,Yes,0.0,0.0,"
    "120.00,960.00,"
)


def _alice_s_training_runs_edited_in_a_newer_export(landing: Path) -> None:
    """B-7's timesheets: a newer Harvest export with Alice's Training runs of 3 November edited from 8 h to 5 h."""
    text = (landing / "timesheets" / "harvest_time_report_2026-11.csv").read_text(encoding="utf-8")
    assert _ALICE_S_TRAINING_RUNS in text
    edited = _ALICE_S_TRAINING_RUNS.replace(",8,8,", ",5,5,").replace(",960.00,", ",600.00,")
    (landing / _EDITED).write_text(text.replace(_ALICE_S_TRAINING_RUNS, edited), encoding="utf-8")


def test_an_export_loaded_before_the_extent_was_recorded_still_covers_what_it_superseded(later_nights):
    """Upgrade: a newer Harvest export (Alice's Training runs of 3 November edited from 8 h to 5 h) was loaded before
    raw.timesheets_extent existed, and its file has left the landing folder since (raw keeps its rows). Its box is
    then read from its raw rows: the older export's 8 h entry stays superseded. Read from the extent alone, the box
    vanished and B-7's labour counted both (4,830.28 instead of 3,870.28)."""
    first, second, _ = later_nights.nights
    assert first.code == 0, first.err
    labour = "select labour_cost from marts.fct_batch_costs where batch_id = 'B-7'"
    # The demo's 4,230.28 less 3 h x 120.00.
    assert query(first.warehouse, labour) == [(Decimal("3870.28"),)]

    # The night after: the export gone from the landing folder, its extent deleted from raw.
    assert second.code == 0, second.err
    assert query(second.warehouse, labour) == [(Decimal("3870.28"),)]


# B-8's step figures: compute cost 426.13 over the demo's 30 steps of job 2003, 26 counted, 4 discarded.
_B8_STEPS = (
    "select steps_counted, steps_discarded, tokens_counted, compute_cost, cost_per_counted_step "
    "from marts.fct_batch_compute where batch_id = 'B-8'"
)


def _b8_steps_restated_in_a_file_named_before_the_demo_s(landing: Path) -> None:
    """B-8's steps: a file restating steps 3 and 4 of job 2003 as discarded (data_quality), its name sorting before
    the demo's steps.jsonl."""
    steps = (landing / "steps" / "steps.jsonl").read_text(encoding="utf-8").splitlines()
    restated = [
        line.replace('"discarded_reason": null', '"discarded_reason": "data_quality"')
        for line in steps
        if '"job_id": "2003", "step": 3,' in line or '"job_id": "2003", "step": 4,' in line
    ]
    assert len(restated) == 2 and all('"committed": true' in line for line in restated)
    assert _DISCARDS < "steps/steps.jsonl"
    (landing / _DISCARDS).write_text("\n".join(restated) + "\n", encoding="utf-8")


def test_steps_restated_on_a_later_night_win_whatever_their_file_is_named(demo_run, later_nights):
    """The night after the demo, a file restates B-8's steps 3 and 4 of job 2003 as discarded (data_quality). Its
    name, discards-2026-11-17.jsonl, sorts before the demo's steps.jsonl, but its bytes arrived later: it is the
    newest delivery. By hand: 26 - 2 = 24 steps counted, 4 + 2 = 6 discarded, 24,000,000 tokens, the same 426.13 of
    compute, 426.13 / 24 = 17.7554 a counted step (last by path, the demo's 26, 4 and 16.3896 stayed). The file gone
    from the landing folder the night after, raw keeps its rows and its arrival: still 24. Retracted, its rows leave
    raw and the demo's delivery is the newest again: 26, 4 and 16.3896."""
    second, third, fourth = later_nights.nights
    demo = [(26, 4, 26_000_000, Decimal("426.13"), Decimal("16.3896"))]
    assert query(demo_run.warehouse, _B8_STEPS) == demo

    assert second.code == 0, second.out + second.err
    restated_figures = [(24, 6, 24_000_000, Decimal("426.13"), Decimal("17.7554"))]
    assert query(second.warehouse, _B8_STEPS) == restated_figures

    # The file gone from the landing folder.
    assert third.code == 0, third.out + third.err
    assert query(third.warehouse, "select count(*) from raw.training_steps where source_file = ?", [_DISCARDS]) == [
        (2,)
    ]
    assert query(third.warehouse, _B8_STEPS) == restated_figures

    assert later_nights.retracted == [2]
    assert fourth.code == 0, fourth.out + fourth.err
    assert query(fourth.warehouse, _B8_STEPS) == demo


def _b10_budget_revised_in_a_file_named_before_the_demo_s(landing: Path) -> None:
    """B-10's budget: a registry file revising it from 100.00 to 50.00, its name sorting before the demo's."""
    header, *rows = (landing / "registry" / "batches.csv").read_text(encoding="utf-8").splitlines()
    (b10,) = [row for row in rows if row.startswith("B-10,")]
    assert b10.count(",100.00,") == 1
    assert _REVISION < "registry/batches.csv"
    (landing / _REVISION).write_text(f"{header}\n{b10.replace(',100.00,', ',50.00,')}\n", encoding="utf-8")


def test_a_registry_file_delivered_on_a_later_night_revises_the_budget_whatever_its_name(demo_run, later_nights):
    """The night after the demo, registry/batches-2026-11-20.csv revises B-10's budget from 100.00 to 50.00. Its name
    sorts before the demo's registry/batches.csv ('-' before '.'), but its bytes arrived later: the budget is 50.00.
    By hand: B-10 cost 108.00, variance 108.00 - 50.00 = 58.00, 58.00 / 50.00 = 116.00 %, over the 10.00 % boundary
    (last by path, the budget stayed 100.00: variance 8.00, 8.00 %, within the boundary)."""
    budget = (
        "select budget_cost, actual_cost, variance, variance_pct, over_boundary from marts.fct_batch_budget "
        "where batch_id = 'B-10'"
    )
    before = [(Decimal("100.00"), Decimal("108.00"), Decimal("8.00"), Decimal("8.00"), False)]
    assert query(demo_run.warehouse, budget) == before

    night = later_nights.nights[0]
    assert night.code == 0, night.out + night.err
    assert query(night.warehouse, budget) == [
        (Decimal("50.00"), Decimal("108.00"), Decimal("58.00"), Decimal("116.00"), True)
    ]
    assert query(
        night.warehouse, "select budget_cost, source_file from staging.stg_registry__batches where batch_id = 'B-10'"
    ) == [(Decimal("50.00"), _REVISION)]


PURCHASES_HEADER = (
    "purchase_id,purchased_on,asset_class,description,quantity,unit_price,currency,gpus_per_unit,"
    "depreciation_years,salvage_value"
)


def test_a_purchase_is_its_id_in_any_case(tmp_path):
    """A re-export of the procurement ledger writing P-001 as p-001 supersedes the older line: one purchase of two
    servers, 915,596.00, not two (1,831,192.00 depreciated, the GPU-hour price doubled). In one file the two
    spellings are one id written twice: the later line is quarantined (rule purchase_id.unique)."""
    line = ",2026-01-01,gpu_server,8x H100 SXM server,2,457798.00,USD,8,3,0.00"
    staged = staged_rows(
        tmp_path / "again",
        "ledger_purchases",
        {
            "ledger/purchases.csv": [PURCHASES_HEADER, "P-001" + line],
            "ledger/purchases_2026-12.csv": [PURCHASES_HEADER, "p-001" + line],
        },
        "stg_ledger__purchases",
    )
    assert [(row["purchase_id"], row["source_file"].rsplit("/", 1)[-1]) for row in staged] == [
        ("p-001", "purchases_2026-12.csv")
    ]
    one_file = staged_rows(
        tmp_path / "one_file",
        "ledger_purchases",
        {"ledger/purchases.csv": [PURCHASES_HEADER, "P-001" + line, "p-001" + line]},
        "stg_ledger__purchases",
    )
    assert [(row["purchase_id"], row["source_line"]) for row in one_file] == [("P-001", 2)]
