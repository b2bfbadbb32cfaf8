"""Reruns by lineage, retry chains, steps without jobs and sub-second steps (R6, R7, R11, R18), by hand.

Five batches added to the demo night, each on gpu-b (free after 7 November) at November's internal price
(tests/test_end_to_end.PRICE, 2.4775 per GPU-hour: 8 GPUs x 1 h = 19.82):
  R-2  6101 NODE_FAIL (8 GPUs x 2 h), 6102 COMPLETED (8 x 2 h) restarting it with no run reason (restart_of only);
  R-3  6501 FAILED config_error, 6502 its failure_retry (CANCELLED), 6503 a failure_retry of 6502 (each 8 x 1 h);
  R-4  five committed step records labelled R-4 whose job is in no scheduler export;
  R-5  6601 (8 x 1 h) whose steps 1-9 take 0.350 s and step 10 takes 1.900 s;
  R-6  6701 requeued after 1 h keeping its JobID (sacct --duplicates: two incarnations, 8 x 1 h each), restarted from
       the checkpoint after step 2: steps 1-4, then 3-6 again.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from cost_pipeline.ingest.scheduler import SACCT_FIELDS
from tests.helpers import Night, cli_night, query
from tests.test_end_to_end import job_cost

pytestmark = pytest.mark.xdist_group("reruns_and_steps")

REGISTRY_ROW = "{batch},assistant-rl,g,post-training,d,m,c,cfg,1000.00,100.00,3,stop,10.00,v1\n"
TRES = "billing=64,cpu=64,gres/gpu=8,mem=512G,node=1"
JOBS = [  # job id, state, start, hours, Comment
    ("6101", "NODE_FAIL", datetime(2026, 11, 20, 0), 2, "batch=R-2;phase=training;reason=planned_experiment"),
    ("6102", "COMPLETED", datetime(2026, 11, 20, 3), 2, "batch=R-2;phase=training;restart_of=6101"),
    (
        "6501",
        "FAILED",
        datetime(2026, 11, 21, 0),
        1,
        "batch=R-3;phase=training;reason=planned_experiment;end_reason=config_error",
    ),
    (
        "6502",
        "CANCELLED",
        datetime(2026, 11, 21, 2),
        1,
        "batch=R-3;phase=training;reason=failure_retry;restart_of=6501",
    ),
    (
        "6503",
        "COMPLETED",
        datetime(2026, 11, 21, 4),
        1,
        "batch=R-3;phase=training;reason=failure_retry;restart_of=6502",
    ),
    ("6601", "COMPLETED", datetime(2026, 11, 22, 0), 1, "batch=R-5;phase=training;reason=planned_experiment"),
    ("6701", "REQUEUED", datetime(2026, 11, 24, 0), 1, "batch=R-6;phase=training;reason=planned_experiment"),
    ("6701", "COMPLETED", datetime(2026, 11, 24, 1), 1, "batch=R-6;phase=training;reason=planned_experiment", 1),
]
# The history as a warehouse written before step durations were kept to the millisecond stored it: whole seconds.
OLDER_HISTORY = (
    "alter table history.snp_step_costs alter column step_seconds set data type bigint",
    "alter table history.snp_batch_costs alter column step_seconds_max set data type bigint",
)
RESTART_WARNING = (
    "warning: dbt test fct_runs_every_restart_has_run_reason on marts/fct_runs returned 1 failing row "
    "(warn severity: the night goes on)"
)


def _sacct_line(job_id: str, state: str, start: datetime, hours: int, comment: str, restarts: int = 0) -> str:
    end = start + timedelta(hours=hours)
    values = dict.fromkeys(SACCT_FIELDS, "")
    values.update(
        JobID=job_id, JobIDRaw=job_id, JobName=f"r-{job_id}", Account="post-training", Partition="gpu",
        User="trainer", WCKey="*", State=state, ExitCode="0:0", DerivedExitCode="0:0", Reason="None",
        Restarts=str(restarts), Submit=start.isoformat(), Eligible=start.isoformat(), Start=start.isoformat(),
        End=end.isoformat(), Elapsed=f"{hours:02d}:00:00", Timelimit="04:00:00", NNodes="1", NodeList="gpu-b",
        ReqTRES=TRES, AllocTRES=TRES, Comment=comment,
    )  # fmt: skip
    return "|".join(values[field] for field in SACCT_FIELDS)


def _step(batch: str, job_id: str, step: int, started: datetime, seconds: float) -> str:
    ended = started + timedelta(seconds=seconds)
    record = {
        "batch_id": batch, "job_id": job_id, "step": step, "started_at": started.isoformat(timespec="milliseconds"),
        "ended_at": ended.isoformat(timespec="milliseconds"), "committed": True, "discarded_reason": None,
        "samples": 512, "tokens": 1000, "config_version": "cfg", "data_version": "d",
    }  # fmt: skip
    return json.dumps(record) + "\n"


def _steps() -> str:
    lines = [_step("R-4", "7401", n, datetime(2026, 11, 23, 0, n), 30) for n in range(1, 6)]
    at = datetime(2026, 11, 22, 0, 10)
    for n in range(1, 11):
        seconds = 1.9 if n == 10 else 0.35
        lines.append(_step("R-5", "6601", n, at, seconds))
        at += timedelta(seconds=seconds)
    lines += [_step("R-6", "6701", n, datetime(2026, 11, 24, 0, 10 + n), 60) for n in range(1, 5)]
    lines += [_step("R-6", "6701", n, datetime(2026, 11, 24, 1, 10 + n), 60) for n in range(3, 7)]
    return "".join(lines)


@pytest.fixture(scope="module")
def night(demo_run, tmp_path_factory) -> Night:
    """The demo night once more with the five batches added (its own copy of the demo's folders)."""
    assert demo_run.succeeded
    copy = tmp_path_factory.mktemp("reruns")
    landing = copy / "landing"
    shutil.copytree(demo_run.landing, landing)
    shutil.copyfile(demo_run.warehouse, copy / "warehouse.duckdb")
    shutil.copytree(demo_run.warehouse.with_name("warehouse.dagster"), copy / "warehouse.dagster")
    with (landing / "registry" / "batches.csv").open("a", encoding="utf-8") as registry:
        registry.writelines(REGISTRY_ROW.format(batch=batch) for batch in ("R-2", "R-3", "R-4", "R-5", "R-6"))
    (landing / "scheduler" / "sacct_reruns.txt").write_text(
        "|".join(SACCT_FIELDS) + "\n" + "".join(_sacct_line(*job) + "\n" for job in JOBS), encoding="utf-8"
    )
    (landing / "steps" / "steps_reruns.jsonl").write_text(_steps(), encoding="utf-8")
    night = cli_night(landing, copy / "warehouse.duckdb", OLDER_HISTORY)
    assert night.code == 0, night.out + night.err
    return night


def _row(night: Night, sql: str) -> tuple:
    (row,) = query(night.warehouse, sql)
    return row


def test_a_restart_without_a_run_reason_is_a_rerun_and_is_flagged(night):
    # 6102 restarts 6101 (8 GPUs x 2 h = 16 GPU-hours) without a reason: a rerun by its lineage link (R6).
    rerun = job_cost(16)
    assert rerun == Decimal("39.64")
    assert _row(night, "select run_reason, is_rerun from marts.fct_runs where job_id = '6102'") == (None, True)
    assert _row(
        night, "select rerun_gpu_hours, rerun_compute_cost from marts.fct_batch_compute where batch_id = 'R-2'"
    ) == (Decimal(16), rerun)
    assert _row(night, "select rerun_cost from marts.fct_batch_costs where batch_id = 'R-2'") == (rerun,)
    # Reviewed as a failure_retry of a node failure: both runs are unforeseeable failure, no planned work.
    assert _row(
        night, "select unforeseeable_failure_cost, planned_work_cost from marts.fct_batch_budget where batch_id = 'R-2'"
    ) == (2 * rerun, Decimal("0.00"))
    assert RESTART_WARNING in night.out.splitlines()


def test_a_retry_of_a_retry_of_a_configuration_error_is_avoidable_rework(night):
    # 6501 config_error, 6502 its retry, 6503 the retry's retry: all three avoidable (3 x 19.82).
    assert _row(
        night,
        "select avoidable_rework_cost, unforeseeable_failure_cost from marts.fct_batch_budget where batch_id = 'R-3'",
    ) == (3 * job_cost(8), Decimal("0.00"))
    assert 3 * job_cost(8) == Decimal("59.46")
    classes = query(
        night.warehouse,
        "select job_id, review_class from intermediate.int_jobs_reviewed where job_id in ('6501', '6502', '6503') "
        "order by job_id",
    )
    assert classes == [("6501", "avoidable_rework"), ("6502", "avoidable_rework"), ("6503", "avoidable_rework")]


def test_steps_without_jobs_have_no_compute_and_no_unit_cost(night):
    # five counted steps, no job: the compute is not known, so no cost and no cost per step (never 0).
    expected = (0, 5, None, None, None)
    figures = "jobs, steps_counted, compute_cost, rerun_compute_cost, cost_per_counted_step"
    assert _row(night, f"select {figures} from marts.fct_batch_compute where batch_id = 'R-4'") == expected
    assert _row(night, f"select {figures} from marts.fct_phase_compute where batch_id = 'R-4'") == expected


def test_step_durations_are_exact_to_the_millisecond(night):
    # steps 1-9 take 0.350 s, step 10 1.900 s: median 0.350, maximum 1.900 at step 10 (R7).
    figures = "step_seconds_median, step_seconds_max, step_max_number, cost_per_counted_step"
    expected = (Decimal("0.350"), Decimal("1.900"), 10, Decimal("1.9820"))  # 19.82 / 10 counted steps
    assert _row(night, f"select {figures} from marts.fct_batch_compute where batch_id = 'R-5'") == expected
    assert _row(night, f"select {figures} from marts.fct_phase_compute where batch_id = 'R-5'") == expected
    durations = query(
        night.warehouse,
        "select step_number, step_seconds from history.snp_step_costs where job_id = '6601' order by step_number",
    )
    assert durations == [(n, Decimal("1.900") if n == 10 else Decimal("0.350")) for n in range(1, 11)]


def test_steps_run_again_after_a_requeue_count_once(night):
    # R-6: 6701's second incarnation ran steps 3 and 4 again: steps 1-6 count once (6, not 8), the first copies of
    # 3 and 4 are discarded work (rollback), and a counted step costs 2 x 19.82 / 6.
    figures = "steps_run, steps_counted, steps_discarded, tokens_counted, compute_cost, cost_per_counted_step"
    expected = (8, 6, 2, 6000, 2 * job_cost(8), Decimal("6.6067"))
    assert _row(night, f"select {figures} from marts.fct_batch_compute where batch_id = 'R-6'") == expected
    assert query(
        night.warehouse,
        "select discarded_reason, steps_discarded, tokens_discarded from marts.fct_step_discards "
        "where batch_id = 'R-6'",
    ) == [("rollback", 2, 2000)]


def test_the_demo_batches_keep_their_figures_and_versions_in_an_older_history(night, demo_run):
    """The added batches change nothing of the demo's: its batches' bills and snapshot versions. The history was
    whole seconds (OLDER_HISTORY): its columns are widened, a whole duration hashes as before (no new version), and
    the new steps' 0.350 s are kept, not rounded (test_step_durations_are_exact_to_the_millisecond)."""
    demo = "batch_id in ('B-7', 'B-8', 'B-10', 'unattributed')"
    for table in ("marts.fct_batch_compute", "marts.fct_batch_costs", "marts.fct_batch_budget"):
        sql = f"select * from {table} where {demo} order by batch_id"
        assert query(night.warehouse, sql) == query(demo_run.warehouse, sql), table
    for table in ("snp_batch_costs", "snp_step_costs"):
        versions = f"select batch_id, count(*), max(snapshot_version) from history.{table} where {demo} group by 1"
        assert sorted(query(night.warehouse, versions)) == sorted(query(demo_run.warehouse, versions)), table
    types = query(
        night.warehouse,
        "select column_name, data_type from information_schema.columns where table_schema = 'history' "
        "and column_name in ('step_seconds', 'step_seconds_max') order by 1",
    )
    assert types == [("step_seconds", "DECIMAL(18,3)"), ("step_seconds_max", "DECIMAL(18,3)")]
