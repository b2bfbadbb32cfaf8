"""No silent zero: a month whose jobs occupied owned GPUs while no capacity cost could be priced (the capacity
purchase was quarantined) has a null price and cost, flagged unpriced, and the night's summary names it."""

from __future__ import annotations

import io

from cost_pipeline.cli import report, run_pipeline
from cost_pipeline.demo import write_demo_landing
from tests.helpers import query


def test_a_quarantined_capacity_purchase_leaves_compute_unpriced_not_zero(tmp_path):
    landing = write_demo_landing(tmp_path / "landing")
    purchases = landing / "ledger" / "purchases.csv"
    text = purchases.read_text(encoding="utf-8")
    assert ",gpu_server," in text
    # An asset class the contract does not list: the purchase, the demo's only one, is quarantined.
    purchases.write_text(text.replace(",gpu_server,", ",gpu_cluster,"), encoding="utf-8")
    warehouse = tmp_path / "w.duckdb"
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
    out = io.StringIO()
    report(demo_run.warehouse, out)
    assert "Unpriced months" not in out.getvalue()
