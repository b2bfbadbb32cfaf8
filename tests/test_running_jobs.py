"""A job still running when its export was written has occupied its GPUs from its start until the export saw it
running (R4): its cost so far is priced like any occupied time and marked provisional (is_running, running_jobs),
never 0.00; a later export that ends it makes the figures final.

The demo plus batch R-1 (budget 5,000.00 and 2,000 GPU-hours, boundary 10 %) and its one Slurm job 6001: 16 GPUs
from 2026-11-20T00:00:00. Night 1's sacct export has it RUNNING, End Unknown, Elapsed 2-00:00:00: 16 x 48 = 768
GPU-hours so far. Night 2's export has it COMPLETED at 2026-11-23T00:00:00: 16 x 72 = 1,152 GPU-hours.
The demo's November: 16 owned GPUs x 720 h = 11,520 available GPU-hours for a capacity cost of 28,540.82, so a
GPU-hour is 28,540.82 / 11,520 and 768 of them are 28,540.82 / 15 = 1,902.7213 -> 1,902.72; 1,152 of them
28,540.82 / 10 = 2,854.082 -> 2,854.08.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from cost_pipeline.ingest.scheduler import SACCT_FIELDS
from tests.helpers import cli_night, query

# Its module-scoped fixture runs two nights once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("running_jobs")

D = Decimal
REGISTRY_LINE = "R-1,p,g,t,d,m,c,cfg,5000.00,2000.00,3,stop when the plan is met,10.00,v1\n"


def sacct_export(state: str, end: str, elapsed: str) -> str:
    """A one-job sacct export of R-1's job 6001: 16 GPUs from 2026-11-20T00:00:00."""
    tres = "billing=128,cpu=128,gres/gpu=16,mem=1024G,node=2"
    values = {field: "" for field in SACCT_FIELDS} | {
        "JobID": "6001",
        "JobIDRaw": "6001",
        "JobName": "r1-train",
        "Account": "post-training",
        "Partition": "gpu",
        "User": "trainer",
        "State": state,
        "ExitCode": "0:0",
        "Submit": "2026-11-19T23:50:00",
        "Eligible": "2026-11-19T23:50:00",
        "Start": "2026-11-20T00:00:00",
        "End": end,
        "Elapsed": elapsed,
        "Timelimit": "5-00:00:00",
        "NNodes": "2",
        "NodeList": "gpu-a,gpu-b",
        "ReqTRES": tres,
        "AllocTRES": tres,
        "Comment": "batch=R-1;phase=training;reason=planned_experiment",
    }
    return "|".join(SACCT_FIELDS) + "\n" + "|".join(values[field] for field in SACCT_FIELDS) + "\n"


@pytest.fixture(scope="module")
def nights(demo_run, tmp_path_factory) -> dict[int, Path]:
    """The warehouse after night 1 (6001 running) and after night 2 (6001 ended), each its own copy."""
    assert demo_run.succeeded
    root = tmp_path_factory.mktemp("running")
    landing = root / "landing"
    shutil.copytree(demo_run.landing, landing)
    with (landing / "registry" / "batches.csv").open("a", encoding="utf-8") as registry:
        registry.write(REGISTRY_LINE)
    (landing / "scheduler" / "sacct_r1_2026-11-22.txt").write_text(
        sacct_export("RUNNING", "Unknown", "2-00:00:00"), encoding="utf-8"
    )
    first = root / "night1.duckdb"
    shutil.copyfile(demo_run.warehouse, first)
    assert cli_night(landing, first).code == 0
    (landing / "scheduler" / "sacct_r1_2026-11-23.txt").write_text(
        sacct_export("COMPLETED", "2026-11-23T00:00:00", "3-00:00:00"), encoding="utf-8"
    )
    second = root / "night2.duckdb"
    shutil.copyfile(first, second)
    assert cli_night(landing, second).code == 0
    return {1: first, 2: second}


def run_6001(warehouse: Path) -> tuple:
    (row,) = query(
        warehouse,
        "select state, end_at, is_running, running_seen_at, occupied_gpu_hours, compute_cost "
        "from marts.fct_runs where job_id = '6001'",
    )
    return row


def batch_figures(warehouse: Path) -> tuple:
    (row,) = query(
        warehouse,
        "select compute.occupied_gpu_hours, compute.compute_cost, compute.running_jobs, costs.total_cost, "
        "costs.running_jobs, budget.actual_cost, budget.variance, budget.variance_pct, budget.over_boundary, "
        "budget.actual_gpu_hours, budget.running_jobs "
        "from marts.fct_batch_compute as compute "
        "inner join marts.fct_batch_costs as costs using (batch_id) "
        "inner join marts.fct_batch_budget as budget using (batch_id) where batch_id = 'R-1'",
    )
    return row


def test_a_running_job_has_occupied_its_gpus_so_far(nights) -> None:
    assert run_6001(nights[1]) == ("RUNNING", None, True, datetime(2026, 11, 22), D(768), D("1902.72"))


def test_a_running_batch_shows_its_cost_so_far_as_provisional(nights) -> None:
    # 1,902.72 - 5,000.00 = -3,097.28, -61.95 %: an underspend of a batch still running is not flagged (it has not
    # spent its budget yet); its overrun is judged by the forecast.
    assert batch_figures(nights[1]) == (
        D(768),
        D("1902.72"),
        1,
        D("1902.72"),
        1,
        D("1902.72"),
        D("-3097.28"),
        D("-61.95"),
        False,
        D(768),
        1,
    )


def test_the_forecast_low_end_is_never_below_what_is_spent(nights) -> None:
    """Own rates (768 >= the contract's 8 GPU-hours), no loss, the contract's default plan ratios 0 / 1 / 1.5 (two
    finished reference batches are fewer than 5): k = 1,902.72 / 768 = 2.4775 per GPU-hour, so projected(r) =
    1,902.72 + 2.4775 x max(r x 2,000 - 768, 0): 1,902.72, 1,902.72 + 2.4775 x 1,232 = 4,955.00 and
    1,902.72 + 2.4775 x 2,232 = 7,432.50."""
    (row,) = query(
        nights[1],
        "select occupied_gpu_hours, compute_cost_to_date, rates_from, cost_per_occupied_gpu_hour, "
        "projected_compute_cost_low, projected_compute_cost, projected_compute_cost_high, projected_over_boundary "
        "from marts.fct_batch_forecast where batch_id = 'R-1'",
    )
    assert row == (D(768), D("1902.72"), "own", D("2.4775"), D("1902.72"), D("4955.00"), D("7432.50"), False)
    assert row[4] >= row[1]


def test_the_capacity_cost_still_adds_up_with_a_running_job(nights) -> None:
    """November's training GPU-hours are the demo's 368 and 6001's 768; every part of the capacity cost is
    allocated to the cent."""
    assert query(
        nights[1],
        "select training_gpu_hours, allocated_plus_idle_cost, capacity_cost, unreconciled_cost "
        "from marts.fct_capacity_reconciliation where month = '2026-11-01'",
    ) == [(D(1136), D("28540.82"), D("28540.82"), D("0.00"))]


def test_the_job_ending_makes_its_figures_final(nights) -> None:
    """Night 2's export ends 6001: its real end replaces the provisional one. 2,854.08 - 5,000.00 = -2,145.92,
    -42.92 %, beyond the 10 % boundary now that the batch has finished."""
    assert run_6001(nights[2]) == ("COMPLETED", datetime(2026, 11, 23), False, None, D(1152), D("2854.08"))
    assert batch_figures(nights[2]) == (
        D(1152),
        D("2854.08"),
        0,
        D("2854.08"),
        0,
        D("2854.08"),
        D("-2145.92"),
        D("-42.92"),
        True,
        D(1152),
        0,
    )
    assert query(nights[2], "select count(*) from marts.fct_batch_forecast where batch_id = 'R-1'") == [(0,)]


def test_the_history_keeps_the_provisional_version_apart_from_the_final_one(nights) -> None:
    """R16: night 1 writes a version with the running job's cost so far and running_jobs 1, night 2 a new one with
    the final figures; the first is never rewritten."""
    history = (
        "select snapshot_version, occupied_gpu_hours, compute_cost, running_jobs from marts.fct_batch_cost_history"
    )
    assert query(nights[1], f"{history} where batch_id = 'R-1'") == [(1, D(768), D("1902.72"), 1)]
    assert query(nights[2], f"{history} where batch_id = 'R-1' order by snapshot_version") == [
        (1, D(768), D("1902.72"), 1),
        (2, D(1152), D("2854.08"), 0),
    ]
    ((changed,),) = query(
        nights[2],
        "select changed_columns from marts.fct_batch_cost_history where batch_id = 'R-1' and snapshot_version = 2",
    )
    assert "running_jobs" in changed.split(", ")
