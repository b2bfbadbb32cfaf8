"""No silent zero: a month whose jobs occupied owned GPUs while no capacity cost could be priced (the capacity
purchase was quarantined) has a null price and cost, flagged unpriced, and the night's summary names it."""

from __future__ import annotations

import io
from decimal import Decimal
from pathlib import Path

import pytest

from cost_pipeline.cli import report, run_pipeline
from cost_pipeline.demo import write_demo_landing
from tests.helpers import Night, cli_night, query

pytestmark = pytest.mark.xdist_group("unpriced")


def test_a_quarantined_capacity_purchase_leaves_compute_unpriced_not_zero(tmp_path):
    landing = write_demo_landing(tmp_path / "landing")
    purchases = landing / "ledger" / "purchases.csv"
    text = purchases.read_text(encoding="utf-8")
    assert ",gpu_server," in text
    # An asset class the contract does not list: the purchase, the demo's only one, is quarantined.
    purchases.write_text(text.replace(",gpu_server,", ",gpu_cluster,"), encoding="utf-8")
    warehouse = tmp_path / "warehouse.duckdb"
    assert run_pipeline(landing, warehouse)

    assert query(warehouse, "select source, rule from raw.quarantine where source = 'ledger_purchases'") == [
        ("ledger_purchases", "asset_class.isin")
    ]
    months = query(
        warehouse,
        "select month_start, occupied_gpu_hours, price_per_available_gpu_hour, compute_cost, "
        "is_unpriced from marts.fct_gpu_hour_price where occupied_gpu_hours > 0",
    )
    assert months and all(price is None and cost is None and unpriced for _, _, price, cost, unpriced in months)

    batches = {
        r[0]: r[1:]
        for r in query(
            warehouse,
            "select batch_id, compute_cost, rerun_compute_cost, cost_per_effective_gpu_hour, is_unpriced, "
            "unpriced_gpu_hours, occupied_gpu_hours from marts.fct_batch_compute",
        )
    }
    # B-7 ran on owned GPUs only: every figure built on its cost is null, and all its time is unpriced.
    cost, rerun_cost, per_effective, unpriced, unpriced_hours, occupied = batches["B-7"]
    assert (cost, rerun_cost, per_effective, unpriced) == (None, None, None, True)
    assert unpriced_hours == occupied > 0
    # B-10 ran on rented cloud GPUs: its bill prices it.
    assert batches["B-10"][0] is not None and batches["B-10"][3] is False
    assert batches["B-10"][4] == 0

    runs = query(warehouse, "select compute_cost, has_unpriced_month from marts.fct_runs where batch_id = 'B-7'")
    assert runs and all(cost is None and flagged for cost, flagged in runs)

    # The full cost (R9): B-7's owned GPU time has no cost line amount, so its compute and total are null and
    # flagged, never the priced part (labour, services, storage) shown as the total. Its occupied owned GPU-hours
    # from the demo's scheduler: 8 GPUs x 2 h + 16 x 4 h + 16 x 6 h + 8 x 1 h + 8 x 0.5 h = 188.
    full = {
        r[0]: r[1:]
        for r in query(
            warehouse,
            "select batch_id, compute_cost, total_cost, total_cost_low, total_cost_high, is_unpriced, "
            "unpriced_gpu_hours, labour_cost, services_cost from marts.fct_batch_costs",
        )
    }
    compute, total, low, high, unpriced, unpriced_hours, labour, services = full["B-7"]
    assert (compute, total, low, high, unpriced) == (None, None, None, None, True)
    assert unpriced_hours == Decimal("188.0000")
    assert labour > 0 and services > 0
    assert query(
        warehouse,
        "select count(*), sum(gpu_hours) from marts.fct_cost_lines "
        "where batch_id = 'B-7' and is_unpriced and amount is null",
    ) == [
        (
            query(warehouse, "select count(*) from marts.fct_cost_lines where batch_id = 'B-7' and is_unpriced")[0][0],
            Decimal("188.0000"),
        )
    ]
    # B-10 ran on rented cloud GPUs: its bill prices its full cost.
    assert full["B-10"][0] is not None and full["B-10"][1] is not None and full["B-10"][4] is False
    assert full["B-10"][5] == 0

    budget = {
        r[0]: r[1:]
        for r in query(
            warehouse,
            "select batch_id, actual_cost, variance, variance_pct, over_boundary, is_unpriced "
            "from marts.fct_batch_budget",
        )
    }
    assert budget["B-7"] == (None, None, None, None, True)
    assert budget["B-10"][0] == full["B-10"][1] and budget["B-10"][4] is False

    failures = query(
        warehouse,
        "select failed_compute_cost, is_unpriced, unpriced_gpu_hours from "
        "marts.fct_batch_failures where batch_id = 'B-7'",
    )
    assert failures and all(cost is None and flagged and hours > 0 for cost, flagged, hours in failures)
    rounds = query(
        warehouse, "select compute_cost, is_unpriced from intermediate.int_batch_rounds_costed where batch_id = 'B-7'"
    )
    assert rounds and all(cost is None and flagged for cost, flagged in rounds)
    history = query(
        warehouse,
        "select total_cost, is_unpriced, unpriced_gpu_hours from "
        "marts.fct_batch_cost_history where batch_id = 'B-7' and is_latest",
    )
    assert history == [(None, True, Decimal("188.0000"))]

    # The journal posts the priced cost and counts the unpriced lines on the line they would post to, never 0.00.
    journal = query(
        warehouse,
        "select debit, credit, is_unpriced, unpriced_lines, unpriced_gpu_hours from marts.fct_gl_journal "
        "where cost_centre = 'CC-410' and gl_account = '6110'",
    )
    priced, unpriced_lines, unpriced_hours = query(
        warehouse,
        "select sum(amount), count(*) filter (where is_unpriced), sum(gpu_hours) filter (where is_unpriced) "
        "from marts.fct_cost_lines where cost_type = 'compute' and batch_id <> 'unattributed'",
    )[0]
    assert unpriced_lines > 0 and unpriced_hours >= Decimal("188")
    assert journal == [(priced, Decimal("0.00"), True, unpriced_lines, unpriced_hours)]
    assert query(warehouse, "select sum(debit) = sum(credit) from marts.fct_gl_journal") == [(True,)]

    out = io.StringIO()
    report(warehouse, out)
    summary = [line for line in out.getvalue().splitlines() if line.startswith("Unpriced months")]
    assert len(summary) == 1
    for month, hours, *_ in months:
        assert f"{month:%Y-%m} ({float(hours):,.2f} GPU-h)" in summary[0]


def test_the_demo_has_no_unpriced_month(demo_run):
    assert demo_run.succeeded
    assert demo_run.query("select count(*) from marts.fct_gpu_hour_price where is_unpriced") == [(0,)]
    assert demo_run.query("select count(*) from marts.fct_batch_compute where is_unpriced or compute_cost is null") == [
        (0,)
    ]
    # The demo's one unpriced cost is storage: ml-archive/tmp/unpriced.bin, in a class without a price
    # (tests/test_storage.py); its batch's compute is priced.
    assert demo_run.query(
        "select batch_id, compute_cost is null, storage_cost is null, unpriced_gpu_hours from marts.fct_batch_costs "
        "where is_unpriced or total_cost is null"
    ) == [("unattributed", False, True, 0)]
    out = io.StringIO()
    report(demo_run.warehouse, out)
    assert "Unpriced months" not in out.getvalue()


def _move_b8_analysis_job_to_december_2025(landing: Path) -> None:
    """B-8's analysis job (2006: 8 GPUs x 0.5 h) moved to December 2025, before the owned servers were bought
    (test_a_batch_with_one_unpriced_month_is_null_and_the_night_still_passes)."""
    sacct = landing / "scheduler" / "sacct_2026-11.txt"
    lines = sacct.read_text(encoding="utf-8").splitlines(keepends=True)
    moved = [line.replace("2026-11-07T0", "2025-12-07T0") if line.startswith("2006|") else line for line in lines]
    assert moved != lines
    sacct.write_text("".join(moved), encoding="utf-8")


def _ship_b10_cloud_events_again_without_their_cluster(landing: Path) -> None:
    """B-10's cloud job's event stream shipped again as an older exporter wrote it, without the cluster
    (test_the_same_events_delivered_without_their_cluster_are_the_same_job)."""
    stream = (landing / "scheduler" / "cloud_events_2026-11.jsonl").read_text(encoding="utf-8")
    assert '"cluster": "eks-us-east-1", ' in stream
    (landing / "scheduler" / "cloud_events_2026-11-10.jsonl").write_text(
        stream.replace('"cluster": "eks-us-east-1", ', ""), encoding="utf-8"
    )


@pytest.fixture(scope="module")
def b8_and_b10_changed(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Night:
    """One night on a copy of the demo with two independent changes: B-8's (owned) analysis job in an unpriced month
    and B-10's (cloud) events shipped again. Each test asserts its own batch's figures."""
    copy = demo_run.copy_to(tmp_path_factory.mktemp("b8_and_b10") / "demo")
    landing = copy / "landing"
    _move_b8_analysis_job_to_december_2025(landing)
    _ship_b10_cloud_events_again_without_their_cluster(landing)
    return cli_night(landing, copy / "warehouse.duckdb")


def test_a_batch_with_one_unpriced_month_is_null_and_the_night_still_passes(b8_and_b10_changed):
    """B-8's analysis job (2006: 8 GPUs x 0.5 h) moved to December 2025, before the owned servers were bought
    (2026-01-01): that month has no price. B-8 is partly unpriced: its other phases keep their cost, the batch's
    compute and total are null, and every reconciliation test still passes (the night succeeds)."""
    night = b8_and_b10_changed
    assert night.code == 0, night.out + night.err
    warehouse = night.warehouse
    phases = {
        phase: (cost, unpriced, hours)
        for phase, cost, unpriced, hours in query(
            warehouse,
            "select phase, compute_cost, is_unpriced, unpriced_gpu_hours from marts.fct_phase_compute "
            "where batch_id = 'B-8'",
        )
    }
    assert phases["analysis"] == (None, True, Decimal("4.0000"))
    assert phases["training"][0] is not None and phases["training"][1] is False
    assert query(
        warehouse,
        "select compute_cost, is_unpriced, unpriced_gpu_hours from marts.fct_batch_compute where batch_id = 'B-8'",
    ) == [(None, True, Decimal("4.0000"))]
    assert query(warehouse, "select total_cost, is_unpriced from marts.fct_batch_costs where batch_id = 'B-8'") == [
        (None, True)
    ]
    # B-7 is untouched: priced as on the demo night.
    assert query(warehouse, "select compute_cost from marts.fct_batch_compute where batch_id = 'B-7'") == [
        (Decimal("465.77"),)
    ]


def test_a_rented_cluster_job_whose_bill_has_not_arrived_is_pending_not_owned_capacity(tmp_path):
    """B-10's job ran on eks-us-east-1, which the contract lists as rented (owned_vs_cloud.cloud_clusters). Before
    the provider's FOCUS file lands it has no cost yet: pending, its GPU-hours unpriced. It must not take a share
    of the owned capacity at the internal price (which would lower every owned batch's cost)."""
    landing = write_demo_landing(tmp_path / "landing")
    (landing / "billing" / "aws_focus_2026-11.csv").unlink()
    warehouse = tmp_path / "warehouse.duckdb"
    assert run_pipeline(landing, warehouse)

    full = {
        r[0]: r[1:]
        for r in query(
            warehouse,
            "select batch_id, compute_cost, owned_compute_cost, cloud_compute_cost, total_cost, pending_cost, "
            "measured_cost, is_unpriced, unpriced_gpu_hours, weakest_evidence_level from marts.fct_batch_costs",
        )
    }
    # 8 GPUs x 4 h (start 00:10, end 04:10) = 32 GPU-hours with no price; nothing of it owned.
    assert full["B-10"] == (
        None,
        Decimal("0.00"),
        None,
        None,
        None,
        Decimal("0.00"),
        True,
        Decimal("32.0000"),
        "pending",
    )
    # The owned batches keep the demo's compute cost (README): the capacity is shared by owned jobs only.
    assert full["B-7"][:3] == (Decimal("465.77"), Decimal("465.77"), Decimal("0.00"))
    assert full["B-8"][:3] == (Decimal("426.13"), Decimal("426.13"), Decimal("0.00"))
    assert query(
        warehouse,
        "select cost_source, evidence_level, amount, gpu_hours from marts.fct_cost_lines "
        "where batch_id = 'B-10' and cost_type = 'compute'",
    ) == [("cloud_bill", "pending", None, Decimal("32.0000"))]
    assert query(
        warehouse,
        "select count(*) from intermediate.int_capacity_costs_allocated where part_id like '%b10-eval-cloud%'",
    ) == [(0,)]

    out = io.StringIO()
    report(warehouse, out)
    (line,) = [line for line in out.getvalue().splitlines() if line.startswith("Cloud jobs not billed yet")]
    assert line.endswith(": b10-eval-cloud (B-10, 32.00 GPU-h)")


def test_the_same_events_delivered_without_their_cluster_are_the_same_job(b8_and_b10_changed):
    """The cloud job's event stream shipped again as an older exporter wrote it, without the cluster: the same three
    events, the same job. Keyed apart, they made a second job of the same 32 GPU-hours, forever unbilled (B-10's
    compute and total null)."""
    night = b8_and_b10_changed
    assert night.code == 0, night.err
    warehouse = night.warehouse
    assert query(
        warehouse, "select job_key, occupied_gpu_hours from marts.fct_runs where job_id = 'b10-eval-cloud'"
    ) == [("eks-us-east-1/b10-eval-cloud@2026-11-10 00:00:00", Decimal("32.0000"))]
    assert query(
        warehouse, "select compute_cost, total_cost, is_unpriced from marts.fct_batch_costs where batch_id = 'B-10'"
    ) == [(Decimal("96.00"), Decimal("108.00"), False)]
    assert "Cloud jobs not billed yet" not in night.out
