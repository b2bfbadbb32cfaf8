"""Energy and carbon per batch (docs/energy.md) on the demo, worked out by hand.

Every demo GPU draws 650 W while computing (graphics-engine activity 0.85) and 120 W otherwise (setup idle, the
comm wait of every 10th minute after setup, a hang), one sample a minute. B-7's validation job 1004 holds 8 GPUs
for one hour: minutes 0-9 idle, minutes 19, 29, ..., 59 comm wait, the other 45 minutes computing. Per GPU that is
(45 x 650 + 15 x 120) W x 60 s = 1.863 MJ = 0.5175 kWh, so 4.14 kWh for the job, of which 10 x 120 W x 60 s x 8 =
0.16 kWh idle. The contract's PUE is 1.3 and November's grid intensity 410 gCO2e/kWh.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import duckdb
import pytest

from cost_pipeline.contract import Contract, load_contract
from tests.helpers import dbt_test

# Its module-scoped fixture runs once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("energy")

D = Decimal


@pytest.fixture(scope="module")
def run(demo_run):
    assert demo_run.succeeded
    return demo_run


def batch_phase(run, batch_id: str, phase: str) -> dict:
    return run.row("select * from marts.fct_batch_energy where batch_id = ? and phase = ?", [batch_id, phase])


def test_energy_is_power_times_represented_time_by_hand(run) -> None:
    row = batch_phase(run, "B-7", "validation")
    per_gpu_joules = (45 * 650 + 15 * 120) * 60
    assert row["gpu_kwh"] == D(per_gpu_joules * 8) / D(3_600_000) == D("4.14")
    assert row["idle_gpu_kwh"] == D(10 * 120 * 60 * 8) / D(3_600_000) == D("0.16")
    assert row["facility_kwh"] == D("4.14") * D("1.3") == D("5.382")
    assert row["carbon_kg_co2e"] == (D("5.382") * 410 / 1000).quantize(D("0.0001")) == D("2.2066")
    assert row["power_observed_gpu_hours"] == D(8)
    assert row["unobserved_gpu_hours"] == 0
    assert row["energy_evidence"] == "measured"
    # The demo's samples carry no energy counter (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION): power x time measured it.
    assert row["energy_method"] == "power" and row["counter_observed_gpu_hours"] == 0
    assert row["currency"] == "USD"


def test_a_gpu_without_samples_is_unobserved_not_assumed(run) -> None:
    # 1003 (B-7 training, 6 h on 16 GPUs) loses gpu-b's GPU 7 from minute 300: one GPU-hour no sample stands for.
    row = batch_phase(run, "B-7", "training")
    assert row["unobserved_gpu_hours"] == D(1)
    assert row["energy_evidence"] == "partly_observed"
    # B-10 (a cloud job) has no device samples at all: its energy is null, never a nameplate wattage x its GPU-hours.
    row = batch_phase(run, "B-10", "validation")
    assert row["power_observed_gpu_hours"] == 0 and row["unobserved_gpu_hours"] == D(32)
    assert row["energy_evidence"] == "unobserved" and row["energy_method"] == "unobserved"
    assert row["gpu_kwh"] is None and row["facility_kwh"] is None
    assert row["carbon_kg_co2e"] is None and row["energy_cost"] is None


def test_energy_cost_is_facility_energy_at_the_contracts_price_and_the_gap_is_the_rest_of_the_bill(run) -> None:
    # B-7's validation job 1004: 5.382 facility kWh x 0.18 per kWh = 0.96876, rounded once to 0.97.
    assert batch_phase(run, "B-7", "validation")["energy_cost"] == D("0.97")
    rows = run.query(
        "select month_start, part, batch_id, facility_kwh, power_bill, energy_cost"
        " from marts.fct_energy_reconciliation order by month_start, part, batch_id"
    )
    october = [r for r in rows if str(r[0]) == "2026-10-01"]
    # No job ran in October: its whole power bill is the gap, whose energy the ledger (money only) cannot give.
    assert october == [(october[0][0], "gap", None, None, D("1152.00"), D("1152.00"))]
    november = [r for r in rows if str(r[0]) == "2026-11-01"]
    assert {r[2] for r in november if r[1] == "batch"} == {"B-7", "B-8", "unattributed"}
    assert sum(r[5] for r in november) == D("1152.00")  # to the cent
    measured = [r for r in november if r[1] == "batch"]
    for _, _, batch, kwh, _, cost in measured:
        # Priced per job-month and rounded once there: within half a cent per job of the batch's kWh x price.
        jobs = run.query("select count(*) from intermediate.int_job_energy_months_costed where batch_id = ?", [batch])
        assert abs(cost - kwh * D("0.18")) <= D("0.005") * jobs[0][0]
    # The gap is what no sample measured (hosts, network, serving, idle GPUs, cooling beyond PUE): shown, not shared.
    gap = [r[5] for r in november if r[1] == "gap"]
    assert gap == [D("1152.00") - sum(r[5] for r in measured)]
    assert gap[0] > D("1000.00")
    by_batch = dict(
        run.query(
            "select batch_id, sum(energy_cost) from marts.fct_batch_energy"
            " group by batch_id having count(energy_cost) > 0"
        )
    )
    assert by_batch == {r[2]: r[5] for r in measured}
    # Energy is a part of compute cost: no batch's energy cost exceeds its compute cost.
    for batch, cost in by_batch.items():
        compute = run.query("select compute_cost from marts.fct_batch_compute where batch_id = ?", [batch])[0][0]
        assert cost <= compute, batch


def test_contract_gives_pue_and_grid_intensity_per_month() -> None:
    parameters = {r["name"]: r["value"] for r in load_contract("v1").parameter_rows()}
    assert parameters["energy_pue"] == 1.3
    assert parameters["grid_intensity_g_co2e_per_kwh.2026-11"] == 410
    assert parameters["energy_price_per_kwh.2026-11"] == 0.18
    document = dict(load_contract("v1").document)
    document["energy"] = {"pue": 1.3, "grid_intensity_g_co2e_per_kwh": {"2026-13": 400}}
    with pytest.raises(ValueError, match="not YYYY-MM"):
        Contract("v1", document).parameter_rows()


def test_measured_energy_costing_more_than_the_power_bill_warns(tmp_path) -> None:
    """Watts read from milliwatts made B-7's energy cost 24,188.81 against a 1,152.00 bill: the gap row went
    -23,060.62 and nothing warned. energy_within_power_bill (warn severity) lists such a month. Run alone on a
    warehouse holding only the reconciliation's rows: a month whose gap is negative, one whose gap is not."""
    warehouse = tmp_path / "warehouse.duckdb"
    con = duckdb.connect(str(warehouse))
    try:
        con.execute("create schema marts")
        con.execute(
            "create table marts.fct_energy_reconciliation as select * from (values "
            "(date '2026-10-01', 'gap', 1152.00, 1152.00), (date '2026-11-01', 'batch', 1152.00, 24212.62), "
            "(date '2026-11-01', 'gap', 1152.00, -23060.62)) as t(month_start, part, power_bill, energy_cost)"
        )
    finally:
        con.close()
    code, out, results = dbt_test(tmp_path, warehouse, "energy_within_power_bill")
    assert code == 0, out[-3000:]
    tested = [
        (r["unique_id"].split(".")[2], r["status"], r["failures"]) for r in results if r["unique_id"][:5] == "test."
    ]
    assert tested == [("energy_within_power_bill", "warn", 1)]
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        assert con.execute("select * from audit.energy_within_power_bill").fetchall() == [
            (date(2026, 11, 1), D("1152.00"), D("24212.62"), D("-23060.62"))
        ]
    finally:
        con.close()
