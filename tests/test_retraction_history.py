"""Raw is kept and taking data out is on the record, over whole nights: the demo's invoice file deleted, the next
night keeps its services cost and names it missing; retracted, the night after leaves it out, and the cost history
gets a new version of each batch it fed, named by the retraction, with every earlier version as it was. An accrual
of one of its invoices, booked to an unregistered batch, arrives with the deletion and counts only once the billed
line is retracted: the unattributed batch is one the retracted file fed too. A late timesheet for another batch
arrives the same night: that batch's new version is not the retraction's.
Night 1 is the session's demo run (copied); this module runs two more, each of the nightly job's assets that the
changed sources feed (the rest reads nothing the change touches and stays as the night before built it)."""

from __future__ import annotations

import contextlib
import io
import shutil
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

from cost_pipeline.cli import main, run_pipeline
from cost_pipeline.ingest.registry import SOURCES
from tests.helpers import nightly_assets_downstream_of, partial_night, query

# Its module-scoped nights run once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("retraction_history")

INVOICES = "services/invoices_2026-11.csv"
# LC-2026-311 (billed 2,400.00 to B-7 in INVOICES) accrued earlier at 2,000.00 to B-9, a batch never registered.
ACCRUALS = "services/accruals_2026-11.csv"
ACCRUAL = (
    "invoice_id,vendor,batch_id,stage,amount,currency,invoiced_on,service_month\n"
    "LC-2026-311,Labelcraft,B-9,initial_delivery,2000.00,USD,,2026-11\n"
)
SERVICES = "select batch_id, services_cost from marts.fct_batch_costs order by 1"
VERSIONS = "select * from history.snp_batch_costs order by batch_id, snapshot_version"
# Harvest's export, one entry for B-10, which the retracted invoices never fed.
LATE_TIMESHEET = (
    "Date,Client,Project,Project Code,Task,Notes,Hours,Hours Rounded,Billable?,Invoiced?,Approved?,First Name,"
    "Last Name,Roles,Employee?,Billable Rate,Billable Amount,Cost Rate,Cost Amount,Currency,External Reference URL\n"
    "2026-11-12,Internal,assistant-rl,B-10,Business evaluation,,3,3,No,No,Yes,Farah,Haddad,Programme,Yes,0.0,0.0,80.00,"
    "240.00,United States Dollar - USD,\n"
)


def _night_after(landing: Path, warehouse: Path, sources: tuple[str, ...]) -> bool:
    """The night after a copy of the demo (``DemoRun.copy_to``) whose files of ``sources`` changed, or whose rows were
    retracted: those sources' raw assets and every asset of the nightly job downstream of them. Whether it succeeded."""
    keys = nightly_assets_downstream_of(
        [("raw", source) for source in sources],
        covering=("marts/fct_batch_costs", "history/snp_batch_costs", "history/snp_batch_cost_retractions"),
    )
    return run_pipeline(landing, warehouse, asset_keys=list(keys.values()))


@dataclass(frozen=True)
class Nights:
    first: Path
    deleted: Path  # the warehouse after the night the invoice file was gone
    retracted: Path  # after the night that followed its retraction
    summary: str
    deleted_versions: list[tuple]


@pytest.fixture(scope="module")
def nights(demo_run, tmp_path_factory) -> Nights:
    root = tmp_path_factory.mktemp("retraction")
    copy = demo_run.copy_to(root / "demo")
    landing, warehouse = copy / "landing", copy / "warehouse.duckdb"
    (landing / INVOICES).unlink()
    (landing / ACCRUALS).write_text(ACCRUAL, encoding="utf-8")
    night = partial_night(landing, warehouse, [("raw", "service_invoices")])
    assert night.code == 0, night.out
    summary = night.out
    deleted = root / "after_deletion.duckdb"
    shutil.copyfile(warehouse, deleted)
    versions = query(warehouse, VERSIONS)
    with contextlib.redirect_stdout(io.StringIO()):
        argv = ["retract", INVOICES, "--reason", "billed to the wrong project", "--by", "finance-ops"]
        assert main([*argv, "--warehouse", str(warehouse)]) == 0
    (landing / "timesheets" / "harvest_time_report_2026-11_late.csv").write_text(LATE_TIMESHEET, encoding="utf-8")
    assert _night_after(landing, warehouse, ("service_invoices", "timesheets"))
    return Nights(demo_run.warehouse, deleted, warehouse, summary, versions)


def test_a_deleted_invoice_file_keeps_its_cost_and_the_summary_names_it_missing(nights):
    before = query(nights.first, SERVICES)
    assert any(cost for _, cost in before)  # the demo's invoices cost something
    assert query(nights.deleted, SERVICES) == before, "the accrual of a billed invoice does not count"
    (line,) = [line for line in nights.summary.splitlines() if line.strip().startswith("missing:")]
    assert "1 file(s) gone from the landing folder" in line and INVOICES in line and "(since 20" in line
    # Nothing changed in the figures: no new cost-history version.
    assert nights.deleted_versions == query(nights.first, VERSIONS)


def test_a_retracted_invoice_file_leaves_the_figures_and_the_new_versions_name_the_reason(nights):
    before = dict(query(nights.first, SERVICES))
    after = dict(query(nights.retracted, SERVICES))
    billed = {batch for batch, cost in before.items() if cost}
    assert billed == {"B-7", "B-8"} and all(not after[batch] for batch in billed)
    # The billed line gone, its invoice's accrual counts: 2,000.00 to the unattributed batch (B-9 is unregistered).
    assert after["unattributed"] - before["unattributed"] == Decimal("2000.00")
    fed = billed | {"unattributed"}
    assert {b: c for b, c in after.items() if b not in fed} == {b: c for b, c in before.items() if b not in fed}
    assert query(nights.retracted, "select source_file from raw.service_invoices") == [(ACCRUALS,)]

    # History is never rewritten: every earlier version is still there, as written.
    versions = query(nights.retracted, VERSIONS)
    assert set(nights.deleted_versions) <= set(versions)
    new = query(
        nights.retracted,
        "select batch_id, snapshot_version from history.snp_batch_costs as s where snapshot_version = "
        "(select max(snapshot_version) from history.snp_batch_costs as l where l.batch_id = s.batch_id) "
        "and snapshot_version > 1 order by 1",
    )
    assert {batch for batch, _ in new} == fed | {"B-10"}, "B-10: the late timesheet"
    assert query(nights.retracted, "select source, source_file, batch_id from raw.retraction_batches order by 3") == [
        ("service_invoices", INVOICES, batch) for batch in sorted(fed)
    ]
    named = query(
        nights.retracted,
        "select batch_id, snapshot_version, source_file, reason, retracted_by "
        "from history.snp_batch_cost_retractions order by 1",
    )
    assert [(b, v) for b, v, *_ in named] == [(b, v) for b, v in new if b in fed], "only the batches it fed"
    assert {(f, reason, who) for _, _, f, reason, who in named} == {
        (INVOICES, "billed to the wrong project", "finance-ops")
    }


def test_every_declared_batch_lineage_reads_the_relations_a_night_builds(demo_run):
    """Each source's ``batch_lineage`` (what ``retract`` reads) runs on a finished night and gives, for the files the
    source loaded, batches the night knows."""
    batches = {batch for (batch,) in query(demo_run.warehouse, "select batch_id from marts.dim_batches")}
    declared = {name: source.batch_lineage for name, source in SOURCES.items() if source.batch_lineage}
    assert {"service_invoices", "timesheets", "billing_focus", "device_samples", "storage_inventory"} <= set(declared)
    for name, lineage in declared.items():
        loaded = {
            file
            for (file,) in query(
                demo_run.warehouse, f"select source_file from raw.ingested_files where source = '{name}'"
            )
        }
        fed = query(demo_run.warehouse, f"select distinct source_file, batch_id from ({lineage}) as fed")
        if not name.startswith("device_samples"):  # the three telemetry sources end in the same relations
            assert {file for file, _ in fed} <= loaded, name
        assert {batch for _, batch in fed if batch is not None} <= batches, name
        if loaded:
            assert [file for file, _ in fed if file in loaded], f"{name}: the demo's files feed batches; none found"


FOCUS = "billing/aws_focus_2026-11.csv"
# The demo's B-10 volume line (12.00, its Tags naming B-10) as a later export of November restates it: tagged for B-7.
# The later export's copy counts (its tags are not compared) though its name sorts before the demo's, as its bytes
# arrived later; retracted, it leaves the order of delivery and the demo's copy counts again, for B-10.
RESTATED_FOCUS = "billing/aws_focus_2026-11-restated.csv"


def test_a_retracted_focus_export_names_the_batch_an_earlier_export_of_its_line_counts_for_again(demo_copy):
    landing, warehouse = demo_copy / "landing", demo_copy / "warehouse.duckdb"
    header, *lines = (landing / FOCUS).read_text(encoding="utf-8").splitlines()
    (volume,) = [line for line in lines if "vol-0b10ckpt" in line]
    restated = volume.replace('""B-10""', '""B-7""')
    assert restated != volume and '""B-7""' in restated
    assert RESTATED_FOCUS < FOCUS
    (landing / RESTATED_FOCUS).write_text(f"{header}\n{restated}\n", encoding="utf-8")
    costs = "select batch_id, storage_cost, cloud_compute_cost from marts.fct_batch_costs order by 1"
    before = query(warehouse, costs)
    was = {batch: (storage, cloud) for batch, storage, cloud in before}
    # The demo: B-10's storage is the volume's 12.00, its cloud compute the EKS GPU-hours' 102.40 less 6.40 restated.
    assert was["B-10"] == (Decimal("12.00"), Decimal("96.00"))
    assert _night_after(landing, warehouse, ("billing_focus",))
    moved = {batch: (storage, cloud) for batch, storage, cloud in query(warehouse, costs)}
    # By hand: the later export's tag counts, so the volume's 12.00 moves from B-10's storage to B-7's.
    assert moved["B-7"] == (was["B-7"][0] + Decimal("12.00"), was["B-7"][1])
    assert moved["B-10"] == (Decimal("0.00"), Decimal("96.00"))
    assert {b: c for b, c in moved.items() if b not in ("B-7", "B-10")} == {
        b: c for b, c in was.items() if b not in ("B-7", "B-10")
    }

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["retract", RESTATED_FOCUS, "--reason", "restated", "--warehouse", str(warehouse)]) == 0
    fed = query(warehouse, "select batch_id from raw.retraction_batches where source = 'billing_focus' order by 1")
    assert fed == [("B-10",), ("B-7",)], "the batch of every export of its line: the demo's tagged it for B-10"
    assert _night_after(landing, warehouse, ("billing_focus",))
    # The retracted export's row is out of raw and of the order of delivery: the demo's copy counts again, for B-10.
    assert query(warehouse, "select count(*) from raw.billing_focus where source_file = ?", [RESTATED_FOCUS]) == [(0,)]
    assert query(warehouse, costs) == before
    named = query(warehouse, "select distinct batch_id from history.snp_batch_cost_retractions order by 1")
    assert named == [("B-10",), ("B-7",)]
