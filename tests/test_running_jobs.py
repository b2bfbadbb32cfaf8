"""A job still running when its export was written has occupied its GPUs from its start until the export saw it
running (R4): its cost so far is priced like any occupied time and marked provisional (is_running, running_jobs),
never 0.00; a later export that ends it makes the figures final.

The demo plus batch R-1 (budget 5,000.00 and 2,000 GPU-hours, boundary 10 %) and its one Slurm job 6001: 16 GPUs
from 2026-11-20T00:00:00. Night 1's sacct export has it RUNNING, End Unknown, Elapsed 2-00:00:00: 16 x 48 = 768
GPU-hours so far. Night 2's export has it COMPLETED at 2026-11-23T00:00:00: 16 x 72 = 1,152 GPU-hours.
The demo's November: 16 owned GPUs x 720 h = 11,520 available GPU-hours for a capacity cost of 28,540.82, so a
GPU-hour is 28,540.82 / 11,520 and 768 of them are 28,540.82 / 15 = 1,902.7213 -> 1,902.72; 1,152 of them
28,540.82 / 10 = 2,854.082 -> 2,854.08.
R-1 has four counted steps, three of 6001 and one of job 6999, which is in no scheduler export.
Batch R-6 has no plan but its 100 budget GPU-hours (no budget_cost, boundary or rounds) and one Slurm job 6002, 1 GPU
on gpu-b from 2026-11-15T00:00:00, RUNNING with Elapsed 1-00:00:00 in both nights: 24 GPU-hours so far,
28,540.82 / 480 = 59.4600 -> 59.46.
Batches R-7 and R-8 plan a budget of 0.00 (boundary 10 %) and run no job: R-7 has one cloud line of 5.00 (a FOCUS
line tagged R-7), R-8 no cost at all.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from cost_pipeline.cli import main
from cost_pipeline.ingest.scheduler import SACCT_FIELDS
from tests.helpers import append_demo_focus_lines, demo_focus_line, partial_night, query, sacct_text, scrape_metrics

# Its module-scoped fixture runs two nights once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("running_jobs")

D = Decimal
REGISTRY_LINES = [
    "R-1,p,g,t,d,m,c,cfg,5000.00,2000.00,3,stop when the plan is met,10.00,v1\n",
    "R-6,p,g,t,d,m,c,cfg,,100.00,,,,v1\n",  # no plan but its GPU-hours
    "R-7,p,g,t,d,m,c,cfg,0.00,,,,10.00,v1\n",  # a plan of no spend, and a 5.00 cloud line
    "R-8,p,g,t,d,m,c,cfg,0.00,,,,10.00,v1\n",  # a plan of no spend, and none
]
R7_CLOUD = "//compute.googleapis.com/projects/ml/zones/us-central1-a/instances/r7-eval"


def r1_telemetry() -> str:
    """dcgm-exporter scrapes of GPU 0 of gpu-r labelled hpc_job 6001, a minute apart, no energy counter:
    2026-11-21T00:00-00:04 effective (engine 0.93, 720 W), 00:05-00:09 idle (engine 0.05, 120 W), and 2026-11-22T06:00-
    06:09 idle (120 W), after night 1's export saw 6001 running (2026-11-22T00:00)."""
    scrapes = [(datetime(2026, 11, 21, 0, minute, tzinfo=UTC), minute < 5) for minute in range(10)]
    scrapes += [(datetime(2026, 11, 22, 6, minute, tzinfo=UTC), False) for minute in range(10)]
    lines = []
    for at, effective in scrapes:
        metrics = scrape_metrics(effective, 720 if effective else 120)
        labels = 'gpu="0",Hostname="gpu-r",hpc_job="6001"'
        lines += [f"{metric}{{{labels}}} {value} {int(at.timestamp() * 1000)}" for metric, value in metrics.items()]
    return "\n".join(lines) + "\n"


def step_record(step: int, job_id: str) -> str:
    """A committed, counted step of R-1, one minute long, on 2026-11-21."""
    record = {
        "batch_id": "R-1", "job_id": job_id, "step": step, "started_at": f"2026-11-21T00:{step:02d}:00.000",
        "ended_at": f"2026-11-21T00:{step:02d}:59.000", "committed": True, "discarded_reason": None,
        "samples": 512, "tokens": 1000, "config_version": "cfg", "data_version": "d",
    }  # fmt: skip
    return json.dumps(record) + "\n"


def sacct_export(state: str, end: str, elapsed: str, job: str = "6001") -> str:
    """A one-job sacct export: R-1's job 6001, 16 GPUs from 2026-11-20T00:00:00, or R-6's 6002, 1 GPU from
    2026-11-15T00:00:00."""
    r1 = job == "6001"
    tres = "billing=128,cpu=128,gres/gpu=16,mem=1024G,node=2" if r1 else "billing=8,cpu=8,gres/gpu=1,mem=64G,node=1"
    values = {field: "" for field in SACCT_FIELDS} | {
        "JobID": job,
        "JobIDRaw": job,
        "JobName": f"r-{job}",
        "Account": "post-training",
        "Partition": "gpu",
        "User": "trainer",
        "State": state,
        "ExitCode": "0:0",
        "Submit": "2026-11-19T23:50:00" if r1 else "2026-11-15T00:00:00",
        "Eligible": "2026-11-19T23:50:00" if r1 else "2026-11-15T00:00:00",
        "Start": "2026-11-20T00:00:00" if r1 else "2026-11-15T00:00:00",
        "End": end,
        "Elapsed": elapsed,
        "Timelimit": "5-00:00:00",
        "NNodes": "2" if r1 else "1",
        "NodeList": "gpu-a,gpu-b" if r1 else "gpu-b",
        "ReqTRES": tres,
        "AllocTRES": tres,
        "Comment": f"batch={'R-1' if r1 else 'R-6'};phase=training;reason=planned_experiment",
    }
    return sacct_text([values])


# The raw assets of the sources night 1 adds files to (the registry, the sacct exports, the steps, the telemetry and
# the FOCUS export) and of the one night 2 adds a file to (the sacct exports).
NIGHT_1_SOURCES = (
    ("raw", "batch_registry"),
    ("raw", "scheduler_jobs"),
    ("raw", "training_steps"),
    ("raw", "device_samples_dcgm"),
    ("raw", "billing_focus"),
)
NIGHT_2_SOURCES = (("raw", "scheduler_jobs"),)
# What the tests read after each night: the compute, budget, forecast, energy and capacity marts, the history and
# publishing; downstream of either night's sources (``partial_night``'s covering), so built again by both.
READ = (
    "marts/fct_runs",
    "marts/fct_batch_budget",
    "marts/fct_batch_forecast",
    "marts/fct_batch_energy",
    "marts/fct_capacity_reconciliation",
    "marts/fct_batch_cost_history",
    "published/marts",
)


@pytest.fixture(scope="module")
def nights(demo_run, tmp_path_factory) -> dict[int, Path]:
    """The warehouse after night 1 (6001 running) and after night 2 (6001 ended), each its own copy. Each night runs
    only its changed sources' raw assets and every asset of the nightly job downstream of them (``partial_night``):
    the rest reads nothing the change touches and stays as the night before built it."""
    assert demo_run.succeeded
    root = tmp_path_factory.mktemp("running")
    landing = root / "landing"
    shutil.copytree(demo_run.landing, landing)
    with (landing / "registry" / "batches.csv").open("a", encoding="utf-8") as registry:
        registry.writelines(REGISTRY_LINES)
    (landing / "scheduler" / "sacct_r1_2026-11-22.txt").write_text(
        sacct_export("RUNNING", "Unknown", "2-00:00:00"), encoding="utf-8"
    )
    (landing / "scheduler" / "sacct_r6_2026-11-16.txt").write_text(
        sacct_export("RUNNING", "Unknown", "1-00:00:00", job="6002"), encoding="utf-8"
    )
    steps = [step_record(n, "6001") for n in (1, 2, 3)] + [step_record(4, "6999")]
    (landing / "steps" / "steps_r1.jsonl").write_text("".join(steps), encoding="utf-8")
    (landing / "telemetry" / "r1_gpu-r.prom").write_text(r1_telemetry(), encoding="utf-8")
    append_demo_focus_lines(landing, demo_focus_line(landing, R7_CLOUD, amount="5.00", batch_tag="R-7"))
    first = root / "night1.duckdb"
    shutil.copyfile(demo_run.warehouse, first)
    night_1 = partial_night(landing, first, NIGHT_1_SOURCES, covering=READ)
    assert night_1.code == 0, night_1.out
    (landing / "scheduler" / "sacct_r1_2026-11-23.txt").write_text(
        sacct_export("COMPLETED", "2026-11-23T00:00:00", "3-00:00:00"), encoding="utf-8"
    )
    second = root / "night2.duckdb"
    shutil.copyfile(first, second)
    night_2 = partial_night(landing, second, NIGHT_2_SOURCES, covering=READ)
    assert night_2.code == 0, night_2.out
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
    """November's training GPU-hours are the demo's 368, 6001's 768 and 6002's 24; every part of the capacity cost
    is allocated to the cent."""
    assert query(
        nights[1],
        "select training_gpu_hours, allocated_plus_idle_cost, capacity_cost, unreconciled_cost "
        "from marts.fct_capacity_reconciliation where month = '2026-11-01'",
    ) == [(D(1160), D("28540.82"), D("28540.82"), D("0.00"))]


def test_no_cost_per_counted_step_is_made_of_steps_whose_job_is_not_known(nights) -> None:
    """R-1's four counted steps: 6999's compute is not in the 1,902.72 so far, so 1,902.72 / 4 = 475.68 would be a
    unit cost too low; it is null in the forecast as in the bill (fct_batch_compute)."""
    assert query(
        nights[1],
        "select forecast.steps_counted, forecast.compute_cost_to_date, forecast.cost_per_counted_step, "
        "compute.steps_counted, compute.cost_per_counted_step from marts.fct_batch_forecast as forecast "
        "inner join marts.fct_batch_compute as compute using (batch_id) where batch_id = 'R-1'",
    ) == [(4, D("1902.72"), None, 4, None)]


def test_a_batch_without_a_budget_has_no_variance_to_judge(nights) -> None:
    """R-6 has no budget_cost nor boundary: its variance, over_boundary and, though its forecast projects a cost
    (own rates 59.46 / 24 = 2.4775, the low end 59.46 at plan ratio 0), projected_over_boundary are unknown (null),
    not false; no round rule holds, so its stop signal is unknown too."""
    assert query(
        nights[1],
        "select budget_cost, actual_cost, variance, variance_pct, over_boundary, projected_over_boundary, "
        "stop_signal, stop_reason, running_jobs from marts.fct_batch_budget where batch_id = 'R-6'",
    ) == [(None, D("59.46"), None, None, None, None, None, None, 1)]
    assert query(
        nights[1],
        "select cost_per_occupied_gpu_hour, projected_compute_cost_low, budget_cost, projected_over_boundary "
        "from marts.fct_batch_forecast where batch_id = 'R-6'",
    ) == [(D("2.4775"), D("59.46"), None, None)]


def test_a_budget_of_zero_is_a_plan_any_spend_passes_its_boundary(nights) -> None:
    """R-7 planned 0.00 and spent 5.00: a variance of 5.00 past a boundary of 10 % x 0.00 = 0.00, so over_boundary
    (no variance_pct: a share of 0.00 has none); R-8 spent nothing against 0.00: inside. Neither runs a job, so no
    forecast judges them (projected_over_boundary false) and no rule raises a stop signal.
    (Before: a budget of 0.00 was never over its boundary, whatever was spent.)"""
    assert query(
        nights[1],
        "select batch_id, budget_cost, actual_cost, variance, variance_pct, over_boundary, projected_over_boundary, "
        "stop_signal, running_jobs from marts.fct_batch_budget where batch_id in ('R-7', 'R-8') order by 1",
    ) == [
        ("R-7", D("0.00"), D("5.00"), D("5.00"), None, True, False, False, 0),
        ("R-8", D("0.00"), D("0.00"), D("0.00"), None, False, False, False, 0),
    ]


def test_the_statement_says_a_running_batchs_figures_are_provisional(nights, tmp_path) -> None:
    """R-1's statement on night 1 names its one running job and says its cost is so far; night 2's, with 6001
    ended, does not."""
    texts = {}
    for night, warehouse in nights.items():
        out = tmp_path / f"r1-{night}.html"
        assert main(["report", "--batch", "R-1", "--warehouse", str(warehouse), "--out", str(out)]) == 0
        texts[night] = out.read_text(encoding="utf-8")
    provisional = (
        '<p class="note" data-provisional-jobs="1"><strong>Provisional: 1 job of this batch was still running when '
        "the scheduler export was written. Its GPU-hours and cost are so far (until the export saw the job running), "
        "not final: a later night&#x27;s figures replace them.</strong></p>"
    )
    assert provisional in texts[1]
    assert "data-provisional-jobs" not in texts[2] and "Provisional" not in texts[2]


def test_the_team_statement_says_its_month_is_provisional_while_a_job_of_the_team_runs(nights, tmp_path) -> None:
    """Team t (R-1, R-6, R-7, R-8): its November chargeback on night 1 covers two running jobs, 6001 (R-1, from
    20 November) and 6002 (R-6, from 15 November); on night 2 only 6002, still running. Its October chargeback
    covers neither (both started in November). The monthly partition writes the same statements (team_statement).
    (Before: the team statement never said its figures were provisional.)"""

    def team(warehouse: Path, month: str) -> str:
        out = tmp_path / f"t-{warehouse.stem}-{month}.html"
        assert main(["report", "--team", "t", "--month", month, "--warehouse", str(warehouse), "--out", str(out)]) == 0
        return out.read_text(encoding="utf-8")

    assert (
        '<p class="note" data-provisional-jobs="2"><strong>Provisional: 2 jobs of this team&#x27;s batches were still '
        "running when the scheduler export was written. Their GPU-hours and cost are so far (until the export saw "
        "them running), not final: a later night&#x27;s figures replace them.</strong></p>"
    ) in team(nights[1], "2026-11")
    assert (
        '<p class="note" data-provisional-jobs="1"><strong>Provisional: 1 job of this team&#x27;s batches was still '
        "running when the scheduler export was written. Its GPU-hours and cost are so far (until the export saw the "
        "job running), not final: a later night&#x27;s figures replace them.</strong></p>"
    ) in team(nights[2], "2026-11")
    october = team(nights[1], "2026-10")
    assert "Chargeback statement of team t, 2026-10" in october and "Provisional" not in october


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


def samples_6001(warehouse: Path) -> tuple:
    """6001's samples by how they are attributed, its tiers and unobserved time, and its batch's energy."""
    attributed = query(
        warehouse,
        "select attribution, count(*) from intermediate.int_device_samples_attributed where job_id = '6001' "
        "group by attribution order by attribution",
    )
    (tiers,) = query(
        warehouse,
        "select samples, effective_compute_gpu_hours, idle_gpu_hours, unobserved_gpu_hours from marts.fct_runs "
        "where job_id = '6001'",
    )
    (energy,) = query(
        warehouse,
        "select gpu_kwh, idle_gpu_kwh, power_observed_gpu_hours, unobserved_gpu_hours from marts.fct_batch_energy "
        "where batch_id = 'R-1' and phase = 'training'",
    )
    return attributed, tiers, energy


def test_a_running_jobs_samples_are_its_own_until_its_export_saw_it_running(nights) -> None:
    """R5: a running job's samples up to when its export saw it running (night 1: 2026-11-22T00:00) are its own, not
    GPU time no job claims. Night 1: the 10 samples of 21 November, each standing for 60 s (the last, with no later
    sample of its job, for the nominal 60 s): 300 s effective (0.0833 GPU-hours) at 720 W = 0.06 kWh and 300 s idle
    at 120 W = 0.01 kWh, 768 - 600 / 3,600 = 767.8333 GPU-hours unobserved; the 10 samples of 22 November, after it
    was seen running, are nobody's yet (label_names_no_running_job). Night 2's export ends 6001 on 23 November: its
    window grows and its tiers are built again with all 20 (night 2 adds no telemetry): 21 November's last sample now
    stands for 2 x 60 = 120 s (capped, its next is 30 hours later), so idle is 240 + 120 + 600 = 960 s (0.2667
    GPU-hours, 0.01 + 0.002 + 0.02 = 0.032 kWh), 1,152 - 1,260 / 3,600 = 1,151.65 GPU-hours unobserved.
    (Before: none of its samples was its own while it ran: 0 samples, 768 GPU-hours unobserved.)"""
    assert samples_6001(nights[1]) == (
        [("job_label", 10), ("label_names_no_running_job", 10)],
        (10, D("0.0833"), D("0.0833"), D("767.8333")),
        (D("0.0700"), D("0.0100"), D("0.1667"), D("767.8333")),
    )
    assert samples_6001(nights[2]) == (
        [("job_label", 20)],
        (20, D("0.0833"), D("0.2667"), D("1151.6500")),
        (D("0.0920"), D("0.0320"), D("0.3500"), D("1151.6500")),
    )
