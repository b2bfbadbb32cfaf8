"""Cost to complete (R21) and where the money could have been saved (R24) on the demo, worked out by hand.

On the demo B-8 is the one running batch (its sweep's array tasks 2002_[3-4] are still pending); B-7 and B-10 have
finished. Two finished batches are fewer than the contract's min_reference_batches (5), so every range comes from
the contract's default plan ratios 0 / 1 / 1.5. With the batch's own rates, k / (1 - w) = (C / G) / (U / G) = C / U,
so the formula reads projected(r) = C + C / U x max(r x P - U, 0): the cost per useful GPU-hour so far, times the
useful GPU-hours still to go.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import pytest

# Its module-scoped fixture runs once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("forecast_savings")

D = Decimal


def cents(value: Fraction) -> Decimal:
    return (D(value.numerator) / D(value.denominator)).quantize(D("0.01"), rounding=ROUND_HALF_UP)


def projected(cost: str, useful: int, plan: int, ratio: Fraction) -> Decimal:
    remaining = max(ratio * plan - useful, 0)
    return D(cost) + cents(Fraction(D(cost)) * remaining / useful)


@pytest.fixture(scope="module")
def run(demo_run):
    assert demo_run.succeeded
    return demo_run


def test_b8_is_the_running_batch_and_its_projection(run) -> None:
    assert run.query("select batch_id from marts.fct_batch_forecast") == [("B-8",)]
    row = run.row("select * from marts.fct_batch_forecast")
    # B-8's jobs: 172 occupied GPU-hours; lost: 2001 failed (8), 2006 cancelled (4), 2005 an eval_rework rerun (8).
    assert row["occupied_gpu_hours"] == D("172.0000")
    assert row["lost_gpu_hours"] == D("20.0000")
    assert row["useful_gpu_hours"] == D("152.0000")
    assert row["plan_progress_pct"] == D("126.67")  # 152 / 120
    assert row["compute_cost_to_date"] == D("426.13")
    assert row["rates_from"] == "own" and row["range_from"] == "contract_defaults"
    assert row["reference_batches"] == 2
    # Already past its plan at r = 0 and r = 1: nothing left to project; at r = 1.5, 180 - 152 = 28 useful hours.
    assert row["projected_compute_cost_low"] == D("426.13")
    assert row["projected_compute_cost"] == D("426.13")
    assert row["projected_compute_cost_high"] == projected("426.13", 152, 120, Fraction(3, 2)) == D("504.63")
    assert row["other_cost_to_date"] == D("2887.77") - D("426.13")
    assert row["projected_total_cost_low"] == D("2887.77")
    # 2,887.77 passes 400.00 x 1.05 = 420.00: the low end alone is over the boundary.
    assert row["projected_over_boundary"] is True
    assert row["cost_per_counted_step"] == cents(Fraction(42613, 100 * 26))


def test_stop_signal_gains_projected_over_boundary(run) -> None:
    rows = dict(run.query("select batch_id, projected_over_boundary from marts.fct_batch_budget"))
    assert rows == {"B-7": False, "B-8": True, "B-10": False}
    # B-8's stop signal was already raised by its rising rounds; that reason keeps precedence.
    assert run.query("select stop_reason from marts.fct_batch_budget where batch_id = 'B-8'") == [
        ("cost_rising_without_new_evidence",)
    ]


def test_backtest_by_hand(run) -> None:
    rows = {
        (b, p): (low, mid, high, actual)
        for b, p, low, mid, high, actual in run.query(
            "select batch_id, runtime_pct, projected_compute_cost_low, projected_compute_cost,"
            " projected_compute_cost_high, actual_compute_cost from marts.fct_forecast_backtest"
        )
    }
    assert set(rows) == {(b, p) for b in ("B-7", "B-10") for p in (25, 50, 75)}
    # B-7 runs 42.5 h from 2 Nov 08:00; at 25 % (18:37:30) only job 1001 had run: 16 useful GPU-hours for 39.64.
    assert rows[("B-7", 25)] == (
        D("39.64"),
        projected("39.64", 16, 250, Fraction(1)),
        projected("39.64", 16, 250, Fraction(3, 2)),
        D("465.77"),
    )
    # At 50 % (3 Nov 05:15) job 1002 had failed (64 GPU-hours lost): C = 198.20 over 16 useful GPU-hours.
    assert rows[("B-7", 50)][1] == projected("198.20", 16, 250, Fraction(1))
    # B-10 (one 4 h cloud job, 96.00): at 25 % a quarter of it, 8 GPU-hours for 24.00; at r = 1 exactly the actual.
    assert rows[("B-10", 25)] == (D("24.00"), D("96.00"), projected("24.00", 8, 32, Fraction(3, 2)), D("96.00"))
    summary = {
        p: (n, mdape, held)
        for p, n, mdape, held in run.query(
            "select forecast_point, forecasts, median_absolute_pct_error, actual_in_range_pct"
            " from marts.fct_forecast_backtest_summary"
        )
    }
    errors = sorted(abs(mid - actual) * 100 / actual for (low, mid, high, actual) in rows.values())
    assert summary["all"][0] == 6
    assert summary["all"][1] == ((errors[2] + errors[3]) / 2).quantize(D("0.01"), rounding=ROUND_HALF_UP)
    held = sum(low <= actual <= high for (low, mid, high, actual) in rows.values())
    assert summary["all"][2] == (D(held) * 100 / 6).quantize(D("0.01"), rounding=ROUND_HALF_UP)


def job_share(cost: str, gpu_seconds: Fraction, occupied: int) -> Decimal:
    return cents(Fraction(D(cost)) * gpu_seconds / occupied)


def test_savings_by_hand(run) -> None:
    rows = {
        (b, c): (amount, rank)
        for b, c, amount, rank in run.query(
            "select batch_id, category, amount, savings_rank from marts.fct_batch_savings"
        )
    }
    # Idle: each B-7 job's idle GPU-seconds at its own price; 1002's outside its discarded steps (1,200 s x 16
    # GPUs of 230,400 GPU-seconds discarded).
    d_1002 = Fraction(1200 * 16, 230400)
    idle_b7 = (
        job_share("39.64", Fraction(4800), 57600)
        + job_share("158.56", 38400 * (1 - d_1002), 230400)
        + job_share("237.84", Fraction(9600), 345600)
        + job_share("19.82", Fraction(4800), 28800)
        + job_share("9.91", Fraction(4800), 14400)
    )
    assert rows[("B-7", "idle")] == (idle_b7, 1)
    assert rows[("B-7", "discarded_steps")][0] == job_share("158.56", Fraction(1200 * 16), 230400)
    # Communication wait above the training phase's median share (1002: 19,200 / 230,400; 1003: 33,240 / 345,600).
    median = (Fraction(19200, 230400) + Fraction(33240, 345600)) / 2
    assert rows[("B-7", "comm_wait_excess")][0] == job_share("237.84", 33240 - median * 345600, 345600)
    # B-8: the config_error run 2001 and the eval_rework run 2005 are avoidable rework, whole.
    assert rows[("B-8", "avoidable_rerun")] == (D("19.82") + D("19.82"), 1)
    assert rows[("B-8", "discarded_steps")][0] == job_share("317.12", Fraction(1920 * 16), 460800)
    # Every demo GPU worked at some point: nothing over-requested.
    assert all(rows[(b, "over_requested")][0] == 0 for b in ("B-7", "B-8", "B-10"))
    # Queueing: 5 minutes before each start, x GPUs requested (B-7: 8 + 16 + 16 + 8 + 8), at 2.4775.. per hour.
    # November's price: 915,596.00 straight-line over 1,095 days x 30, plus 3,456.00 facility, over 11,520 hours.
    price = (Fraction(915596 * 30, 1095) + 3456) / (16 * 720)
    assert rows[("B-7", "queueing_on_owned_capacity")][0] == cents(Fraction(300 * 56, 3600) * price)
    # Storage: B-7's log past retention (6.67) and the later backup copy of its checkpoint (0.80); B-8's archive
    # copy of its raw shard (3.00). The older copy of each is kept.
    assert rows[("B-7", "storage_past_retention_or_duplicated")][0] == D("7.47")
    assert rows[("B-8", "storage_past_retention_or_duplicated")][0] == D("3.00")


def test_savings_add_up_against_the_bill(run) -> None:
    bill = {
        b: (compute, storage)
        for b, compute, storage in run.query("select batch_id, compute_cost, storage_cost from marts.fct_batch_costs")
    }
    for batch, category, amount, on_bill in run.query(
        "select batch_id, category, amount, on_batch_bill from marts.fct_batch_savings"
    ):
        compute, storage = bill[batch]
        limit = storage if category.startswith("storage") else compute
        assert amount >= 0
        assert not on_bill or amount <= limit, (batch, category)
    for batch, compute_sum, storage_sum in run.query(
        "select batch_id, sum(case when category not like 'storage%' then amount else 0 end),"
        " sum(case when category like 'storage%' then amount else 0 end)"
        " from marts.fct_batch_savings where on_batch_bill group by batch_id"
    ):
        assert compute_sum <= bill[batch][0] and storage_sum <= bill[batch][1], batch


def test_what_if_at_the_best_observed_utilization(run) -> None:
    """fct_batch_what_if: B-8 is the best (145.2 effective of 172 observed GPU-hours); B-7 (152.7 effective of 187
    observed, 1 unobserved, 465.77) would have occupied 1 + 152.7 / (145.2 / 172) GPU-hours of its 188 at its own
    price; B-10 has no device sample, so no utilization and no what-if figure."""
    rows = {
        r[0]: r[1:]
        for r in run.query(
            "select batch_id, effective_utilization, best_batch_id, compute_cost, compute_cost_at_best_utilization, "
            "saving_at_best_utilization, currency from marts.fct_batch_what_if"
        )
    }
    assert set(rows) == {"B-7", "B-8", "B-10"}  # registered batches only, not 'unattributed'
    best = Fraction(1452, 1720)
    b7_at_best = cents(Fraction(D("465.77")) * (1 + Fraction(1527, 10) / best) / 188)
    assert b7_at_best == D("450.62")
    assert rows["B-7"] == (D("0.8166"), "B-8", D("465.77"), b7_at_best, D("465.77") - b7_at_best, "USD")
    assert rows["B-8"] == (D("0.8442"), "B-8", D("426.13"), D("426.13"), D("0.00"), "USD")
    assert rows["B-10"] == (None, "B-8", D("96.00"), None, None, "USD")


def test_owned_vs_cloud_at_the_same_skus_price(run) -> None:
    """fct_batch_what_if, owned vs cloud: the EKS SKU's November lines are 102.40 for 32 GPU-hours and a correction
    of -6.40 for -2, so 3.20 per GPU-hour; B-7's 188 and B-8's 172 owned GPU-hours cost 601.60 and 550.40 there.
    B-10 ran only in the cloud: nothing owned to price."""
    rows = {
        r[0]: r[1:]
        for r in run.query(
            "select batch_id, cloud_gpu_sku, owned_gpu_hours, owned_compute_cost, cloud_unpriced_gpu_hours, "
            "cloud_cost_of_owned_gpu_hours, owned_minus_cloud from marts.fct_batch_what_if"
        )
    }
    price = (Fraction(D("102.40")) - Fraction(D("6.40"))) / (32 - 2)
    assert price == Fraction(16, 5)
    assert rows["B-7"] == ("SKU-AmazonEKS", D("188"), D("465.77"), D("0"), cents(188 * price), D("-135.83"))
    assert rows["B-8"] == ("SKU-AmazonEKS", D("172"), D("426.13"), D("0"), cents(172 * price), D("-124.27"))
    assert rows["B-10"][1:] == (D("0"), D("0.00"), D("0"), D("0.00"), D("0.00"))
