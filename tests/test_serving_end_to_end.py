"""The demo's month of serving, checked by hand (cost_pipeline/demo.py: SERVING_*, serving_tasks)."""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from tests.helpers import Night, partial_night, query
from tests.test_end_to_end import PRICE, cents

pytestmark = pytest.mark.xdist_group("serving_end_to_end")

# assistant-large: 8 GPUs x 720 h x 4.00; assistant-small: 2 GPUs x 720 h at November's internal price.
LARGE_GPU = Decimal("23040.00")
SMALL_GPU = cents(PRICE * 2 * 720)
# The other costs (5,500.00) are shared by GPU-hours: 5,760 vs 1,440, so 80% / 20%.
LARGE_COST = LARGE_GPU + Decimal("4400.00")
SMALL_COST = SMALL_GPU + Decimal("1100.00")


def per_request(cost: Decimal, requests: int) -> Decimal:
    return (cost / requests).quantize(Decimal("0.000001"), ROUND_HALF_UP)


def test_monthly_spend_over_completed_requests(demo_run):
    rows = {
        r[0]: r[1:]
        for r in demo_run.query(
            "select model, gpu_cost, other_cost, serving_cost, requests_total, requests_completed, cost_per_request "
            "from marts.fct_service_month where month = '2026-11-01'"
        )
    }
    # Large: 200 tasks routed to it + 40 escalations, all completed. Small: 400 first attempts, 80 retries,
    # 40 second attempts of failed tasks; the 80 attempts of those failed tasks did not complete.
    assert rows["assistant-large"] == (
        LARGE_GPU,
        Decimal("4400.00"),
        LARGE_COST,
        240,
        240,
        per_request(LARGE_COST, 240),
    )
    assert rows["assistant-small"] == (
        SMALL_GPU,
        Decimal("1100.00"),
        SMALL_COST,
        520,
        440,
        per_request(SMALL_COST, 440),
    )
    assert SMALL_COST == Decimal("4667.60")


def test_groups_tenants_and_tasks_add_up_to_the_month_to_the_cent(demo_run):
    month_total = demo_run.query("select sum(serving_cost) from marts.fct_service_month")[0][0]
    assert month_total == LARGE_COST + SMALL_COST
    by_model = dict(demo_run.query("select model, sum(group_cost) from marts.fct_request_group_costs group by model"))
    assert by_model == {"assistant-large": LARGE_COST, "assistant-small": SMALL_COST}
    assert demo_run.query("select sum(serving_cost) from marts.fct_tenant_service_costs")[0][0] == month_total
    # Every request belongs to a task; people add 40 hand-offs x 6 minutes at 60.00 an hour.
    assert demo_run.query("select sum(task_cost), sum(human_cost) from marts.fct_task_costs")[0] == (
        month_total + 240,
        Decimal("240.00"),
    )


def test_cost_per_successful_task_counts_every_attempt(demo_run):
    economics = {
        r[0]: r[1:]
        for r in demo_run.query(
            "select model, tasks, tasks_succeeded, tasks_failed, human_handoffs, escalations, attempts, success_rate, "
            "task_cost, cost_per_successful_task from marts.fct_model_task_economics"
        )
    }
    small = economics["assistant-small"]
    assert small[:7] == (400, 360, 40, 40, 40, 560, Decimal("0.9000"))
    assert small[8] == (small[7] / 360).quantize(Decimal("0.000001"), ROUND_HALF_UP)
    large = economics["assistant-large"]
    assert large[:7] == (200, 180, 20, 0, 0, 200, Decimal("0.9000"))
    escalated = demo_run.row("select * from marts.fct_task_costs where task_id = 'T0008'")  # i = 7: escalated
    assert (escalated["attempts"], escalated["escalations"], escalated["routed_model"]) == (2, 1, "assistant-small")
    handed_off = demo_run.row("select * from marts.fct_task_costs where task_id = 'T0009'")  # i = 8: a person
    assert handed_off["human_handoff"] and handed_off["human_cost"] == Decimal("6.00")


def test_training_and_serving_never_share_a_table(demo_run):
    serving = {
        t
        for (t,) in demo_run.query(
            "select table_name from information_schema.columns where table_schema = 'marts' and column_name = 'tenant'"
        )
    }
    training = {
        t
        for (t,) in demo_run.query(
            "select table_name from information_schema.columns "
            "where table_schema = 'marts' and column_name = 'batch_id'"
        )
    }
    assert serving == {"fct_tenant_service_costs"}
    assert not serving & training


def test_a_month_s_serving_costs_no_replica_carries_fail_the_night_naming_the_test(demo_copy):
    """A month's other serving costs are shared among the models whose replicas held GPUs that month: with no
    replica in December, its 500.00 would be in no model-month and out of the service book, with exit 0."""
    landing = demo_copy / "landing"
    (landing / "serving" / "monthly_costs_2026-12.csv").write_text(
        "month,item,amount\n2026-12,operations,500.00\n", encoding="utf-8"
    )
    night = _serving_night(demo_copy)
    said = night.out + night.err
    assert night.code == 1, said
    assert "sums_match_int_model_months_costed_other_cost_cents" in said


# The marts a request's cost reaches, each read whole but for the model added below.
SERVING_MARTS = (
    "fct_service_month",
    "fct_request_group_costs",
    "fct_tenant_service_costs",
    "fct_task_costs",
    "fct_task_routing",
    "fct_model_task_economics",
)


def _request(request_id: str, at: str, task_id: str | None, attempt: int, status: str = "completed") -> dict:
    return {
        "request_id": request_id,
        "requested_at": at,
        "model": "assistant-owned",
        "tenant": "acme",
        "business_line": "support",
        "input_tokens": 300,
        "output_tokens": 100,
        "cache_hit": False,
        "latency_ms": 800,
        "latency_tier": "interactive",
        "status": status,
        "task_id": task_id,
        "attempt": attempt,
        "escalated_to": None,
        "human_handoff": False,
    }


def _gateway_request(number: int, **fields: object) -> dict:
    """A completed request of the small model on 15 November, outside any task, as a gateway logs it."""
    at = f"2026-11-15T10:{number // 60:02d}:{number % 60:02d}"
    return {**_request(f"G-{number:03d}", at, None, 1), "model": "assistant-small", **fields}


# The serving sources' raw assets: a change to their files moves only what is downstream of them.
SERVING_SOURCES = (("raw", "serving_requests"), ("raw", "serving_replicas"), ("raw", "serving_monthly_costs"))


def _serving_night(copy: Path, sources: tuple[tuple[str, ...], ...] = SERVING_SOURCES) -> Night:
    """The night after the demo on a copy of it (``demo_copy``) whose files of ``sources`` (the serving sources unless
    named) changed, as ``cost-pipeline run`` prints it and exits (``partial_night``): every serving model, the GPU-hour
    prices and training costs that share capacity with serving, their dbt tests, and publishing."""
    return partial_night(
        copy / "landing",
        copy / "warehouse.duckdb",
        sources,
        covering=("marts/fct_service_month", "marts/fct_task_routing", "published/marts"),
    )


def _add_an_owned_replica_without_a_price_before_the_purchase(landing: Path) -> None:
    """assistant-owned: a replica (blank agreed price) in December 2025, three requests then and one in January 2026,
    when it has no replica (test_an_owned_replica_in_a_month_without_an_internal_price_is_unpriced_not_free)."""
    replicas = landing / "serving" / "replicas.csv"
    replicas.write_text(
        replicas.read_text(encoding="utf-8") + "R-O1,assistant-owned,2,2025-12-01T00:00:00,2026-01-01T00:00:00,\n",
        encoding="utf-8",
    )
    requests = [
        _request("U1-1", "2025-12-02T10:00:00", "U1", 1, status="failed"),
        _request("U1-2", "2025-12-02T10:05:00", "U1", 2),
        _request("U2-1", "2025-12-03T10:00:00", "U2", 1),
        _request("U3-1", "2026-01-05T10:00:00", "U3", 1),  # no replica of the model in January
    ]
    (landing / "requests" / "requests_2025-12.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8"
    )


def _list_r_l1_again_in_december_2026(landing: Path) -> None:
    """December 2026's replica list names R-L1 again with its December run, and no request comes that month
    (test_a_replica_listed_again_in_next_month_s_file_keeps_its_earlier_run)."""
    (landing / "serving" / "replicas_2026-12.csv").write_text(
        "replica_id,model,gpus,started_at,ended_at,gpu_hour_price\n"
        "R-L1,assistant-large,8,2026-12-01T00:00:00,2027-01-01T00:00:00,4.00\n",
        encoding="utf-8",
    )


def _quarantine_september_2026_s_only_replica(landing: Path) -> None:
    """assistant-spare: September 2026's only replica run, R-Q1 (0 GPUs: quarantined, its start and end known), the
    month's other costs (300.00) and two requests of the model
    (test_a_month_whose_only_replica_is_quarantined_is_unknown_not_a_failed_night)."""
    (landing / "serving" / "replicas_2026-09.csv").write_text(
        "replica_id,model,gpus,started_at,ended_at,gpu_hour_price\n"
        "R-Q1,assistant-spare,0,2026-09-01T00:00:00,2026-10-01T00:00:00,4.00\n",
        encoding="utf-8",
    )
    (landing / "serving" / "monthly_costs_2026-09.csv").write_text(
        "month,item,amount\n2026-09,operations,300.00\n", encoding="utf-8"
    )
    requests = [{**_request(f"S{n}-1", f"2026-09-1{n}T10:00:00", None, 1), "model": "assistant-spare"} for n in (1, 2)]
    (landing / "requests" / "requests_2026-09.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8"
    )


# The models the shared night below adds, each in months of its own: the demo's marts are the rest.
ADDED_MODELS = "('assistant-owned', 'assistant-spare')"
# The summary's unpriced-serving line when November's shared costs are unknown: both models' requests unpriced.
NOVEMBER_BOTH_UNPRICED = (
    "in the month; request costs null, not 0.00): 2026-11 assistant-large (240 requests), 2026-11 assistant-small "
    "(520 requests)"
)


@pytest.fixture(scope="module")
def months_around_november(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Night:
    """One night on a copy of the demo with three independent changes, each in months and models of its own outside
    the demo's November: an unpriced owned model in December 2025 and January 2026, R-L1 listed again in December
    2026, and September 2026's only replica run quarantined. None touches another's model-months, nor the demo's
    November."""
    copy = demo_run.copy_to(tmp_path_factory.mktemp("months_around_november") / "demo")
    landing = copy / "landing"
    _add_an_owned_replica_without_a_price_before_the_purchase(landing)
    _list_r_l1_again_in_december_2026(landing)
    _quarantine_september_2026_s_only_replica(landing)
    return _serving_night(copy)


def test_an_owned_replica_in_a_month_without_an_internal_price_is_unpriced_not_free(demo_run, months_around_november):
    """No silent zero on the serving side: an owned replica (blank agreed price) in December 2025, before the demo's
    capacity purchase is in service (2026-01-01), has no internal GPU-hour price. Its model-month's GPU cost and spend
    C were 0.00 and its requests cost 0.00 in every serving mart, with exit 0. Now they are null and counted; so are
    the requests of January 2026, when the model has no replica at all. The demo's November is unchanged."""
    night = months_around_november
    assert night.code == 0, night.out + night.err
    # The night's summary names them, as it names the unpriced months of owned compute.
    assert (
        "Unpriced serving (a replica without a price, or no replica, in the model's month, or a quarantined replica "
        "in the month; request costs null, not 0.00): 2025-12 assistant-owned (3 requests), 2026-01 assistant-owned "
        "(1 request), 2026-09 assistant-spare (2 requests)\n"  # September: the shared night's quarantined replica
    ) in night.out

    def rows(sql: str) -> list[tuple]:
        return query(night.warehouse, sql)

    # 2 GPUs x 31 days x 24 h = 1,488 GPU-hours, known; the month has no other serving costs.
    assert rows(
        "select month, is_unpriced, gpu_hours, gpu_cost, other_cost, serving_cost, requests_total, requests_completed, "
        "unpriced_requests, cost_per_request, allocated_to_requests "
        "from marts.fct_service_month where model = 'assistant-owned'"
    ) == [(date(2025, 12, 1), True, Decimal("1488.0000"), None, Decimal("0.00"), None, 3, 2, 3, None, None)]
    assert rows(
        "select month, requests, requests_not_completed, unpriced_requests, group_cost, cost_per_request "
        "from marts.fct_request_group_costs where model = 'assistant-owned' order by all"
    ) == [(date(2025, 12, 1), 2, 1, 3, None, None), (date(2026, 1, 1), 1, 0, 1, None, None)]
    assert rows(
        "select month, requests_total, unpriced_requests, serving_cost "
        "from marts.fct_tenant_service_costs where model = 'assistant-owned' order by all"
    ) == [(date(2025, 12, 1), 3, 3, None), (date(2026, 1, 1), 1, 1, None)]
    assert rows(
        "select task_id, attempts, unpriced_requests, request_cost, human_cost, task_cost "
        "from marts.fct_task_costs where routed_model = 'assistant-owned' order by task_id"
    ) == [
        ("U1", 2, 2, None, Decimal("0.00"), None),
        ("U2", 1, 1, None, Decimal("0.00"), None),
        ("U3", 1, 1, None, Decimal("0.00"), None),
    ]
    assert rows(
        "select tasks, unpriced_tasks, cost_per_call, task_cost, cost_per_successful_task "
        "from marts.fct_model_task_economics where model = 'assistant-owned'"
    ) == [(3, 3, None, None, None)]
    for mart in SERVING_MARTS:
        model = "routed_model" if mart in ("fct_task_costs", "fct_task_routing") else "model"
        demo = f"select * from marts.{mart} where {model} not in {ADDED_MODELS} order by all"
        if mart == "fct_service_month":  # R-L1's December 2026 (the shared night's other change) is a month of its own
            demo = demo.replace(" order by", " and month <> '2026-12-01' order by")
        assert rows(demo) == demo_run.query(demo), mart


def test_a_replica_still_up_is_quarantined_and_leaves_its_month_s_shared_costs_unknown(demo_run, demo_copy):
    """An operator's export leaves R-S1's ended_at blank (the replica is still up): the row is quarantined with its
    file, line and rule (a replica list names no instant it saw the replica running, so its hours so far are not
    known, unlike a running Slurm job's Start + Elapsed). Its 1,440 GPU-hours are missing from November, so how the
    month's other 5,500.00 shares out by GPU-hours is unknown. They all landed on assistant-large (other_cost
    4,400.00 -> 5,500.00, cost_per_request 114.33 -> 118.92), with exit 0; now its other cost and spend C are null and
    flagged, its GPU cost (8 GPUs x 720 h x 4.00) still known, and the summary names the unpriced requests."""
    landing = demo_copy / "landing"
    replicas = landing / "serving" / "replicas.csv"
    text = replicas.read_text(encoding="utf-8")
    assert "R-S1,assistant-small,2,2026-11-01T00:00:00,2026-12-01T00:00:00," in text
    replicas.write_text(text.replace("2026-11-01T00:00:00,2026-12-01T00:00:00,\n", "2026-11-01T00:00:00,,\n"))
    night = _serving_night(demo_copy)
    said = night.out + night.err
    assert "[serving_replicas] serving/replicas.csv, line 3: rule ended_at.not_nullable" in said, said
    assert NOVEMBER_BOTH_UNPRICED in night.out
    assert query(
        night.warehouse,
        "select model, gpu_hours, is_unpriced, gpu_cost, other_cost, serving_cost, requests_completed, "
        "unpriced_requests, cost_per_request, allocated_to_requests from marts.fct_service_month",
    ) == [("assistant-large", Decimal("5760.0000"), True, LARGE_GPU, None, None, 240, 240, None, None)]
    assert query(night.warehouse, "select count(*), count(group_cost) from marts.fct_request_group_costs") == [
        query(demo_run.warehouse, "select count(*), 0 from marts.fct_request_group_costs")[0]
    ]
    # The training side does not share the serving allocation: its bills are the demo's.
    bills = "select * from marts.fct_batch_costs order by all"
    assert query(night.warehouse, bills) == demo_run.query(bills)


def test_a_month_whose_only_replica_is_quarantined_is_unknown_not_a_failed_night(demo_run, months_around_november):
    """September 2026's only replica run (R-Q1, assistant-spare) is quarantined (0 GPUs): no model holds GPUs that
    month, so its other costs (300.00) had no model-month to be shared over, and their reconciliation
    (sums_match_int_model_months_costed_other_cost_cents) failed the night: no batch's marts published. A month in
    which a quarantined run held GPUs has its shared costs unknown, whether or not another run was staged: the night
    is built, September's requests unpriced and named, the 300.00 in no model's share, every other figure published."""
    night = months_around_november
    said = night.out + night.err
    assert night.code == 0, said
    assert "[serving_replicas] serving/replicas_2026-09.csv, line 2: rule gpus" in said
    assert "2026-09 assistant-spare (2 requests)" in night.out
    assert query(
        night.warehouse,
        "select replica_id, started_at, ended_at, source_file, source_line "
        "from intermediate.int_replica_runs_quarantined",
    ) == [("R-Q1", datetime(2026, 9, 1), datetime(2026, 10, 1), "serving/replicas_2026-09.csv", 2)]
    assert query(night.warehouse, "select count(*) from marts.fct_service_month where month = '2026-09-01'") == [(0,)]
    assert query(
        night.warehouse,
        "select month, model, requests, unpriced_requests, group_cost from marts.fct_request_group_costs "
        "where model = 'assistant-spare'",
    ) == [(date(2026, 9, 1), "assistant-spare", 2, 2, None)]
    # The 300.00 is shared over no one: the book's other costs are the demo's 5,500.00 (December 2025 and 2026 have
    # none), and the batches' marts are published as the demo's.
    assert query(night.warehouse, "select sum(other_cost) from marts.fct_service_month") == [(Decimal("5500.00"),)]
    bills = "select * from marts.fct_batch_costs order by all"
    assert query(night.warehouse, bills) == demo_run.query(bills)


def _refuse_r_s1_s_replica_file_whole(landing: Path) -> None:
    """R-S1 moved to a replica list of its own whose header lacks gpu_hour_price
    (test_a_replicas_file_refused_whole_leaves_every_month_s_shared_costs_unknown)."""
    serving = landing / "serving"
    lines = (serving / "replicas.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    small = [line for line in lines if line.startswith("R-S1,")]
    assert small == ["R-S1,assistant-small,2,2026-11-01T00:00:00,2026-12-01T00:00:00,\n"]
    (serving / "replicas.csv").write_text("".join(line for line in lines if line not in small), encoding="utf-8")
    (serving / "replicas_small.csv").write_text(
        "replica_id,model,gpus,started_at,ended_at\n" + small[0].removesuffix(",\n") + "\n", encoding="utf-8"
    )


# The model of the gateway log's requests in the night below: one with no replica (its requests are unpriced in any
# night), sorting after the demo's models in the summary's unpriced-serving line.
GATEWAY_MODEL = "assistant-tiny"


def _log_a_request_with_neither_latency_field(landing: Path) -> None:
    """A gateway's log of two requests of GATEWAY_MODEL, G-001 with neither latency field, G-002 with latency_ms
    only (test_a_request_with_neither_latency_tier_nor_latency_ms_is_quarantined_not_a_failed_night)."""
    requests = [
        _gateway_request(1, model=GATEWAY_MODEL, latency_ms=None, latency_tier=None),
        _gateway_request(2, model=GATEWAY_MODEL, latency_tier=None),
    ]
    (landing / "requests" / "gateway_2026-11.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8"
    )


@pytest.fixture(scope="module")
def replicas_file_refused_whole(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Night:
    """One night on a copy of the demo with two independent changes: R-S1's replica list refused whole, and a gateway
    log of two requests of a model with no replica, one quarantined, the other unpriced whichever replicas are read.
    Neither touches the other's rows or figures: the refused file leaves every month's shared costs unknown, which an
    unpriced model's request does not move."""
    copy = demo_run.copy_to(tmp_path_factory.mktemp("replicas_file_refused_whole") / "demo")
    landing = copy / "landing"
    _refuse_r_s1_s_replica_file_whole(landing)
    _log_a_request_with_neither_latency_field(landing)
    return _serving_night(copy)


def test_a_replicas_file_refused_whole_leaves_every_month_s_shared_costs_unknown(demo_run, replicas_file_refused_whole):
    """R-S1 in a replica list of its own whose header lacks gpu_hour_price: the file is refused whole (line 0,
    csv_header) and nothing records its runs, so the month's other 5,500.00 went silently onto assistant-large
    (other_cost 4,400.00 -> 5,500.00, spend C 27,440.00 -> 28,540.00), with exit 0. A file refused whole is a run no one
    read, of unknown months (every month's serving figures change: its night shares no priced model-month with
    another scenario): November's shared costs are unknown, as with a quarantined row, the large model's GPU cost still
    known, and the summary names the month."""
    night = replicas_file_refused_whole
    said = night.out + night.err
    assert night.code == 0, said
    assert "[serving_replicas] serving/replicas_small.csv, line 0: rule csv_header" in said
    assert NOVEMBER_BOTH_UNPRICED in night.out
    assert query(
        night.warehouse,
        "select model, gpu_hours, is_unpriced, gpu_cost, other_cost, serving_cost, cost_per_request "
        "from marts.fct_service_month",
    ) == [("assistant-large", Decimal("5760.0000"), True, LARGE_GPU, None, None, None)]
    bills = "select * from marts.fct_batch_costs order by all"
    assert query(night.warehouse, bills) == demo_run.query(bills)


def test_a_replica_listed_again_in_next_month_s_file_keeps_its_earlier_run(months_around_november):
    """Replica lists per month: December's names R-L1 again with its December run. Each run is the replica's id and
    start, so November keeps R-L1's 23,040.00 (8 GPUs x 720 h x 4.00); keyed by the id alone, December's row replaced
    November's, whose 240 requests went unpriced and assistant-small took all of the month's other costs.
    December has no request yet: its spend stands on its own (before, the night failed on it)."""
    D = Decimal
    night = months_around_november
    assert night.code == 0, night.err
    rows = query(
        night.warehouse,
        "select month, model, gpu_cost, other_cost, serving_cost, requests_total, allocated_to_requests "
        "from marts.fct_service_month where model <> 'assistant-owned' order by month, model",
    )
    assert rows == [
        # November as in the demo: 23,040.00 + 4,400.00 of the other costs (by GPU-hours 5,760 : 1,440 of 5,500.00).
        (date(2026, 11, 1), "assistant-large", D("23040.00"), D("4400.00"), D("27440.00"), 240, D("27440.00")),
        (date(2026, 11, 1), "assistant-small", D("3567.60"), D("1100.00"), D("4667.60"), 520, D("4667.60")),
        # December: 8 GPUs x 744 h x 4.00, no other costs booked and no request yet to carry it (a deployed model
        # idle all month is spend of its own, not a failed night).
        (date(2026, 12, 1), "assistant-large", D("23808.00"), D("0.00"), D("23808.00"), 0, D("0.00")),
    ]


@pytest.mark.parametrize("name", ["replicas_2026-11-corrected.csv", "replicas-2026-11-corrected.csv"])
def test_a_later_list_correcting_a_run_s_start_supersedes_the_run_it_overlaps(demo_copy, name):
    """A second November list, delivered on the next night, names R-L1's run with its start corrected to 00:06 (the
    same replica, the same run); the second name sorts before the demo's replicas.csv, and arriving later still
    makes it the newer file. The newer file's run supersedes the older one it overlaps: R-L1 holds
    8 GPUs x (720 h - 6 min) = 5,759.2 GPU-h, 23,036.80 at 4.00. Both runs counted, it held 11,519.2 GPU-h and cost
    46,076.80 (the large model's spend C 50,965.65, 212.356875 per request), with only a warning; with the older
    file taken for newer (last by path), the demo's start stood and the correction was dropped.

    The month's other 5,500.00 is shared by GPU-seconds, 20,733,120 : 5,184,000: 439,987.78 and 110,012.22 cents,
    the one cent left to the larger remainder: 4,399.88 and 1,100.12."""
    D = Decimal
    landing, warehouse = demo_copy / "landing", demo_copy / "warehouse.duckdb"
    (landing / "serving" / name).write_text(
        "replica_id,model,gpus,started_at,ended_at,gpu_hour_price\n"
        "R-L1,assistant-large,8,2026-11-01T00:06:00,2026-12-01T00:00:00,4.00\n",
        encoding="utf-8",
    )
    night = _serving_night(demo_copy)
    assert night.code == 0, night.out
    large = D("23036.80") + D("4399.88")
    small = SMALL_GPU + D("1100.12")
    assert query(
        warehouse,
        "select model, gpu_hours, gpu_cost, other_cost, serving_cost, requests_completed, cost_per_request "
        "from marts.fct_service_month order by model",
    ) == [
        ("assistant-large", D("5759.2000"), D("23036.80"), D("4399.88"), large, 240, per_request(large, 240)),
        ("assistant-small", D("1440.0000"), SMALL_GPU, D("1100.12"), small, 440, per_request(small, 440)),
    ]
    assert (large, per_request(large, 240)) == (D("27436.68"), D("114.319500"))
    assert query(warehouse, "select replica_key, source_file from staging.stg_serving__replicas order by 1") == [
        ("R-L1@2026-11-01 00:06:00", f"serving/{name}"),
        ("R-S1@2026-11-01 00:00:00", "serving/replicas.csv"),
    ]
    # Nothing overlaps any more: the warning that the two runs were both counted is gone.
    assert "serving_replica_runs_do_not_overlap" not in night.out + night.err


def test_a_re_export_changing_ids_case_counts_each_record_once(demo_copy):
    """A re-export may change an id's case; the same record is matched by its id case-folded (same_id).

    serving/replicas_2026-11-30.csv: the demo's replicas.csv with its ids in lower case (R-L1 -> r-l1). Both
    spellings counted: assistant-large held 11,520 GPU-h, its spend 50,480.00 for 27,440.00.

    registry/batches.csv re-exported with B-8 as b-8, the jobs, invoices, time entries and storage rules still
    saying B-8 (one night checks several sources, not a night each): b-8 showed actual 0.00, variance -100%, and
    its 2,887.77 was unattributed (241.65 -> 3,129.42), with no warning; then its three trial rounds (rounds.csv
    saying B-8) still showed none and no stop signal. The registry's spelling is shown.

    A request is its id case-folded and its start (stg_serving__requests.request_key).
    requests/requests_2026-11_reexport.jsonl: the same 760 requests with their ids in lower case. Both counted:
    assistant-large completed 480 requests, 57.17 each for 114.33. requests/requests_gw2_2026-11-29.jsonl: 20
    requests of the large model on 29 November, no task, from a gateway whose provider reuses the ids T0001-1 to
    T0020-1 (LiteLLM issue 28376): the newer delivery took their place, 20 of the small model's task attempts
    vanished (780 staged, 760 kept) without a word. Both count: the large model 260 completed, the small 440."""
    D = Decimal
    landing, warehouse = demo_copy / "landing", demo_copy / "warehouse.duckdb"
    replicas = (landing / "serving" / "replicas.csv").read_text(encoding="utf-8")
    (landing / "serving" / "replicas_2026-11-30.csv").write_text(
        replicas.replace("R-L1", "r-l1").replace("R-S1", "r-s1"), encoding="utf-8"
    )
    log = (landing / "requests" / "requests_2026-11.jsonl").read_text(encoding="utf-8").splitlines()
    reexport = [json.dumps({**r, "request_id": r["request_id"].lower()}) for r in map(json.loads, log)]
    (landing / "requests" / "requests_2026-11_reexport.jsonl").write_text("\n".join(reexport) + "\n", encoding="utf-8")
    reused = [
        json.dumps({**_request(f"T{n:04d}-1", f"2026-11-29T00:{n:02d}:00", None, 1), "model": "assistant-large"})
        for n in range(1, 21)
    ]
    (landing / "requests" / "requests_gw2_2026-11-29.jsonl").write_text("\n".join(reused) + "\n", encoding="utf-8")
    registry = landing / "registry" / "batches.csv"
    registry.write_text(registry.read_text(encoding="utf-8").replace("\nB-8,", "\nb-8,"), encoding="utf-8")
    night = _serving_night(demo_copy, (*SERVING_SOURCES, ("raw", "batch_registry")))
    assert night.code == 0, night.err
    # The unattributed total is null (its storage holds an object in an unpriced class): its labour 160.00 says
    # b-8's 2,887.77 is not in it.
    assert query(
        warehouse,
        "select batch_id, total_cost, labour_cost from marts.fct_batch_costs "
        "where batch_id in ('B-8', 'b-8', 'unattributed') order by 1",
    ) == [("b-8", D("2887.77"), D("920.00")), ("unattributed", None, D("160.00"))]
    # Its trial rounds (rounds.csv still saying B-8) are the registry's batch's: three rounds, the stop signal.
    assert query(
        warehouse, "select actual_cost, rounds_run, stop_signal from marts.fct_batch_budget where batch_id = 'b-8'"
    ) == [(D("2887.77"), 3, True)]
    assert query(
        warehouse,
        "select model, gpu_hours, serving_cost, requests_completed from marts.fct_service_month "
        "where month = '2026-11-01' order by model",
    ) == [
        ("assistant-large", D("5760.0000"), LARGE_COST, 260),
        ("assistant-small", D("1440.0000"), SMALL_COST, 440),
    ]
    assert LARGE_COST == D("27440.00")
    assert query(
        warehouse, "select count(*), count(distinct lower(request_id)) from staging.stg_serving__requests"
    ) == [(780, 760)]
    # The 20 reused ids name two requests each, each with its own share: the shares add up to each model's spend.
    assert query(
        warehouse,
        "select model, count(*), sum(request_cost_cents) from intermediate.int_requests_costed group by 1 order by 1",
    ) == [("assistant-large", 260, int(LARGE_COST * 100)), ("assistant-small", 520, int(SMALL_COST * 100))]
    assert query(warehouse, "select replica_id from staging.stg_serving__replicas order by 1") == [("r-l1",), ("r-s1",)]


def _night_with_gateway_log(demo_copy, requests: list[dict]) -> Night:
    """The serving night after the demo with ``requests`` in a gateway's log of November; it succeeds."""
    landing = demo_copy / "landing"
    (landing / "requests" / "gateway_2026-11.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8"
    )
    night = _serving_night(demo_copy)
    assert night.code == 0, night.out + night.err
    return night


def test_a_blank_task_escalation_tenant_or_business_line_is_absent(demo_run, demo_copy):
    """Go gateways and many JSON serialisers write "" (or spaces) for an unset field. 100 such requests of the small
    model, in no task, made a task '' of 100 attempts and 100 escalations routed to the small model (401 tasks, 140
    escalations, 660 attempts, and the requests' cost in the small model's task cost) and a tenant ''. A blank text
    is absent: no task, no escalation, tenant and business line unassigned.

    Each added request weighs 300 + 3 x 11,000 = 33,300 by the contract's allocation key, the 100 of them 3,330,000
    beside the demo's small requests' 3,338,000: of the small model's 4,667.60 each takes exactly
    466,760 x 33,300 / 6,668,000 = 2,331 cents, 2,331.00 together. The tasks routed to the small model cost the
    demo's 10,478.00 (4,667.60 of small requests, 5,570.40 of their 40 escalations to the large model, 240.00 of
    people) less those 2,331.00: 8,147.00, over 360 successful tasks 22.630556."""
    blank = ("", "  ")
    night = _night_with_gateway_log(
        demo_copy,
        [
            _gateway_request(
                n,
                output_tokens=11000,
                latency_ms=44400,
                latency_tier="batch",
                task_id=blank[n % 2],
                escalated_to=blank[(n + 1) % 2],
                tenant=blank[n % 2],
                business_line=blank[(n + 1) % 2],
            )
            for n in range(1, 101)
        ],
    )

    def rows(sql: str) -> list[tuple]:
        return query(night.warehouse, sql)

    assert rows(
        "select tasks, tasks_succeeded, escalations, attempts, task_cost, cost_per_successful_task "
        "from marts.fct_model_task_economics where model = 'assistant-small'"
    ) == [(400, 360, 40, 560, Decimal("8147.00"), Decimal("22.630556"))]
    demo_small = demo_run.query("select task_cost from marts.fct_model_task_economics where model = 'assistant-small'")
    assert demo_small == [(Decimal("8147.00") + Decimal("2331.00"),)]
    assert rows("select count(*), count(distinct task_id), min(task_id) from marts.fct_task_costs") == [
        (600, 600, "T0001")
    ]
    assert rows(
        "select tenant, business_line, requests_total, serving_cost from marts.fct_tenant_service_costs "
        "where tenant = 'unassigned' or business_line = 'unassigned' or trim(tenant) = '' or trim(business_line) = ''"
    ) == [("unassigned", "unassigned", 100, Decimal("2331.00"))]
    # The month's spend is the demo's, now over 540 completed requests.
    assert rows(
        "select serving_cost, requests_total, requests_completed, unpriced_requests, cost_per_request "
        "from marts.fct_service_month where model = 'assistant-small'"
    ) == [(SMALL_COST, 620, 540, 0, per_request(SMALL_COST, 540))]


def test_a_model_named_in_another_case_or_with_spaces_is_the_same_model(demo_run, demo_copy):
    """Model names are compared in lower case, without surrounding spaces. 40 requests of "Assistant-Small" (or
    " assistant-small ") were unpriced and out of the small model's N (440 completed, C / N 10.608182), and a replica
    of " Assistant-Large" left every request of the large model unpriced. They are one model now, in every mart
    under one name: the small model's 4,667.60 over 480 completed requests is 9.724167 a request, and the large
    model's figures are the demo's."""
    replicas = demo_copy / "landing" / "serving" / "replicas.csv"
    replicas.write_text(
        replicas.read_text(encoding="utf-8").replace("R-L1,assistant-large,", "R-L1, Assistant-Large,"),
        encoding="utf-8",
    )
    spellings = ("Assistant-Small", " assistant-small ", "ASSISTANT-SMALL", "assistant-Small")
    night = _night_with_gateway_log(demo_copy, [_gateway_request(n, model=spellings[n % 4]) for n in range(1, 41)])

    def rows(sql: str) -> list[tuple]:
        return query(night.warehouse, sql)

    service = "select model, serving_cost, requests_total, requests_completed, unpriced_requests, cost_per_request, "
    service += "allocated_to_requests from marts.fct_service_month order by model"
    assert rows(service) == [
        demo_run.query(service)[0],
        ("assistant-small", SMALL_COST, 560, 480, 0, Decimal("9.724167"), SMALL_COST),
    ]
    assert per_request(SMALL_COST, 480) == Decimal("9.724167")
    for mart in SERVING_MARTS:
        model = "routed_model" if mart in ("fct_task_costs", "fct_task_routing") else "model"
        assert rows(f"select distinct {model} from marts.{mart} order by 1") == [
            ("assistant-large",),
            ("assistant-small",),
        ], mart
    assert rows("select sum(unpriced_requests) from marts.fct_request_group_costs") == [(0,)]


def test_a_request_with_neither_latency_tier_nor_latency_ms_is_quarantined_not_a_failed_night(
    replicas_file_refused_whole,
):
    """Both latency fields are optional, one at a time: a request with neither has no tier to be grouped by. It got
    past ingest and stopped the whole night in dbt (int_requests_costed's not-null latency_tier); now it is
    quarantined with its file, line and rule, and the other request of the file counts (in the night of
    replicas_file_refused_whole, whose only other quarantine is of a replica list)."""
    night = replicas_file_refused_whole
    assert night.code == 0, night.out + night.err
    warehouse = night.warehouse
    assert query(
        warehouse,
        "select source_file, line, rule from raw.quarantine where source = 'serving_requests' order by line",
    ) == [("requests/gateway_2026-11.jsonl", 1, "latency_known")]
    # G-002 gave 800 ms: its tier is derived (interactive, as the demo's).
    assert query(
        warehouse,
        "select request_id, latency_tier from intermediate.int_requests_costed where request_id like 'G-%'",
    ) == [("G-002", "interactive")]
