"""Every ledger cent of owned capacity is in a book (R8, R12): a month's capacity cost (depreciation + facility) is
allocated and reconciled even when no owned GPU was in service that month (its facility cost is idle capacity, the
GPU-hour price null) or when nothing but the ledger names the month (depreciation of a month in the warehouse's
period, from the contract's operations.first_month, before the first job, replica or facility cost)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

from cost_pipeline.cli import run_pipeline
from tests.helpers import cli_night, nightly_assets_downstream_of, query

D = Decimal
RECONCILIATION = (
    "select month, available_gpu_hours, depreciation_cost, facility_cost, capacity_cost, training_gpu_hours, "
    "serving_gpu_hours, idle_gpu_hours, allocated_training_cost, allocated_serving_cost, idle_capacity_cost, "
    "unreconciled_cost from marts.fct_capacity_reconciliation order by month"
)
# November on the demo (tests/test_batch_costs.py): 16 GPUs x 720 h, 25,084.82 of depreciation + 3,456.00 of
# facility, 368 GPU-hours of training (911.72), the small replica's 1,440 (3,567.60), the idle rest (24,061.50).
NOVEMBER = (
    D("11520.0000"),
    D("25084.82"),
    D("3456.00"),
    D("28540.82"),
    D("368.0000"),
    D("1440.0000"),
    D("9712.0000"),
    D("911.72"),
    D("3567.60"),
    D("24061.50"),
    D("0.00"),
)


# The ledger's raw assets: a change to it moves only what is downstream of them.
LEDGER = (("raw", "ledger_purchases"), ("raw", "ledger_facility"))


def _ledger_night(demo_copy: Path, change) -> Path:
    """The night after the demo on a copy of it, its ledger changed: the ledger's raw assets and every asset of the
    nightly job downstream of them (every model and snapshot that reads the ledger, with its dbt tests, and
    publishing); the rest reads nothing the change touches and stays as the demo's night built it."""
    landing = demo_copy / "landing"
    change(landing / "ledger")
    keys = nightly_assets_downstream_of(
        LEDGER, covering=("marts/fct_capacity_reconciliation", "marts/fct_batch_compute")
    )
    warehouse = demo_copy / "warehouse.duckdb"
    assert run_pipeline(landing, warehouse, asset_keys=list(keys.values()))
    return warehouse


def _months(warehouse: Path) -> dict[str, tuple]:
    return {month.isoformat(): tuple(rest) for month, *rest in query(warehouse, RECONCILIATION)}


def _owned_batches_unchanged(warehouse: Path) -> None:
    # README's demo table: the owned batches' compute cost does not move.
    assert query(
        warehouse,
        "select batch_id, compute_cost from marts.fct_batch_compute where batch_id in ('B-7', 'B-8') order by 1",
    ) == [("B-7", D("465.77")), ("B-8", D("426.13"))]


def _every_ledger_cent_is_reconciled(warehouse: Path) -> None:
    ledger = query(warehouse, "select sum(amount) from staging.stg_ledger__facility_costs")[0][0]
    assert query(warehouse, "select sum(facility_cost) from marts.fct_capacity_reconciliation") == [(ledger,)]
    assert query(
        warehouse,
        "select count(*) from (select month_start, sum(allocated_cents) as cents, max(capacity_cost_cents) as total "
        "from intermediate.int_capacity_costs_allocated group by month_start) where cents <> total",
    ) == [(0,)]


def test_facility_cost_of_a_month_with_no_owned_gpu_in_service_is_idle_capacity(demo_copy):
    """The servers bought on 2026-11-01 instead of 2026-01-01: October's rent, power and network (3,456.00) were
    paid for a room with no owned GPU in service. They are October's capacity cost, all of it idle, with no
    GPU-hour price; November (a whole month in service: 915,596.00 x 30 / 1,095 = 25,084.82) does not change."""

    def bought_in_november(ledger: Path) -> None:
        purchases = ledger / "purchases.csv"
        text = purchases.read_text(encoding="utf-8")
        assert ",2026-01-01,gpu_server," in text
        purchases.write_text(text.replace(",2026-01-01,gpu_server,", ",2026-11-01,gpu_server,"), encoding="utf-8")

    warehouse = _ledger_night(demo_copy, bought_in_november)
    zero = D("0.0000")
    october = (zero, D("0.00"), D("3456.00"), D("3456.00"), zero, zero, zero, D("0.00"), D("0.00"), D("3456.00"))
    assert _months(warehouse) == {"2026-10-01": (*october, D("0.00")), "2026-11-01": NOVEMBER}
    assert query(
        warehouse,
        "select part_kind, gpu_seconds, capacity_cost_cents, allocated_cents "
        "from intermediate.int_capacity_costs_allocated where month_start = date '2026-10-01'",
    ) == [("idle", 0, 345600, 345600)]
    assert query(
        warehouse,
        "select gpus_in_service, capacity_cost, price_per_available_gpu_hour, is_unpriced "
        "from marts.fct_gpu_hour_price where month_start = date '2026-10-01'",
    ) == [(0, D("3456.00"), None, False)]
    _every_ledger_cent_is_reconciled(warehouse)
    _owned_batches_unchanged(warehouse)


def test_depreciation_of_a_month_the_ledger_alone_names_is_reconciled(demo_copy):
    """No facility cost booked for October: no job, replica or facility line names the month, but the servers
    (bought 2026-01-01) were in service, and October is in the warehouse's period (the contract's first_month,
    2026-10). Its depreciation, 915,596.00 x 31 / 1,095 = 25,920.98, over 16 GPUs x 744 h, is idle capacity.
    January to September are before the period and stay out."""

    def no_october_facility(ledger: Path) -> None:
        facility = ledger / "facility.csv"
        lines = facility.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [line for line in lines if not line.startswith("2026-10,")]
        assert len(kept) == len(lines) - 3
        facility.write_text("".join(kept), encoding="utf-8")

    warehouse = _ledger_night(demo_copy, no_october_facility)
    hours, zero = D("11904.0000"), D("0.0000")
    october = (hours, D("25920.98"), D("0.00"), D("25920.98"), zero, zero, hours, D("0.00"), D("0.00"))
    assert _months(warehouse) == {"2026-10-01": (*october, D("25920.98"), D("0.00")), "2026-11-01": NOVEMBER}
    assert query(
        warehouse,
        "select month_start, depreciation_cost, price_per_available_gpu_hour from marts.fct_gpu_hour_price "
        "where month_start < date '2026-11-01'",
    ) == [(date(2026, 10, 1), D("25920.98"), D("2.177502"))]  # 25,920.98 / 11,904 GPU-hours
    _every_ledger_cent_is_reconciled(warehouse)
    _owned_batches_unchanged(warehouse)


# sacct jobs appended to the demo's export (scheduler/sacct_2026-11.txt, 26 records: the appended one is line 28).
SACCT = "scheduler/sacct_2026-11.txt"
_SACCT_JOB = (
    "{id}|{id}|b10-{name}|post-training|gpu|trainer|*|COMPLETED|0:0|0:0|None||0|{start}|{start}|{start}|{end}|"
    "{elapsed}|30-00:00:00|{nodes}|{hosts}|gres/gpu={gpus},node={nodes}|gres/gpu={gpus},node={nodes}|"
    "batch=B-10;phase=training;reason=planned_experiment|\n"
)


def _sacct_job(landing: Path, **fields: object) -> None:
    with (landing / SACCT).open("a", encoding="utf-8") as handle:
        handle.write(_SACCT_JOB.format(**fields))


def test_a_job_holding_more_gpus_than_its_nodes_have_fails_the_night(demo_copy):
    """AllocTRES gres/gpu=64 on one node (NNodes=1, NodeList=gpu-a), where the ledger's largest server holds 8 GPUs:
    64 GPU-hours an hour were priced on owned capacity (B-10's owned compute 0.00 -> 158.56, exit 0) and, at
    gres/gpu=100000, capacity cost moved off serving; only is_overbooked said so, untested. jobs_fit_on_their_nodes
    now fails the night on the job (1 node x 8 GPUs < 64), naming its file and line; nothing is published."""
    landing = demo_copy / "landing"
    _sacct_job(
        landing,
        id=9901,
        name="wide",
        start="2026-11-20T08:00:00",
        end="2026-11-20T09:00:00",
        elapsed="01:00:00",
        nodes=1,
        hosts="gpu-a",
        gpus=64,
    )

    night = cli_night(landing, demo_copy / "warehouse.duckdb")

    assert night.code != 0, night.out
    assert "the run failed: dbt test jobs_fit_on_their_nodes" in night.err
    assert f"1 row breaks it, from {SACCT} line 28" in night.err
    assert query(
        demo_copy / "warehouse.duckdb",
        "select node_count, node_list, whole_gpus_allocated, most_gpus_per_unit, source_file, source_line "
        "from audit.jobs_fit_on_their_nodes",
    ) == [(1, "gpu-a", 64, 8, SACCT, 28)]


def test_an_overbooked_month_is_a_warning_naming_it(demo_copy):
    """A job on both servers (NNodes=2, 16 GPUs: 8 a node, as the ledger's servers hold) for 29 days, beside the
    demo's training and the small replica on owned GPUs: November's usage is more than the servers were available.
    The capacity cost is then spread over the usage (is_overbooked), and the night now warns, naming the month. By
    hand: available 16 GPUs x 720 h = 11,520 GPU-hours; training the demo's 368 + 16 x 29 x 24 = 11,136, so 11,504;
    serving 1,440; over by 11,504 + 1,440 - 11,520 = 1,424."""
    landing, warehouse = demo_copy / "landing", demo_copy / "warehouse.duckdb"
    _sacct_job(
        landing,
        id=9902,
        name="month",
        start="2026-11-01T00:00:00",
        end="2026-11-30T00:00:00",
        elapsed="29-00:00:00",
        nodes=2,
        hosts="gpu-a,gpu-b",
        gpus=16,
    )

    night = cli_night(landing, warehouse)

    assert night.code == 0, night.err
    assert (
        "warning: dbt test capacity_not_overbooked on marts/fct_capacity_reconciliation returned 1 failing row, "
        "stored in audit.capacity_not_overbooked (warn severity: the night goes on)"
    ) in night.out.splitlines()
    assert query(warehouse, "select * from audit.capacity_not_overbooked") == [
        (date(2026, 11, 1), D("11520.0000"), D("11504.0000"), D("1440.0000"), D("1424.0000"))
    ]
