"""A Slurm job given a whole node is allocated every GPU on it, more than it asked for, and is charged for all of
them (docs/inputs.md, docs/contract.md "Cross-field rules"; R4: occupied = allocated, R24: over_requested).

The demo's landing folder (copied) gains a sacct --parsable2 export (the layout and fields of docs/inputs.md's
command, a job and its batch and extern steps) of job 9501 (batch B-8, training), submitted with --exclusive on
8-GPU node gpu-x: ReqTRES gres/gpu=4, AllocTRES gres/gpu=8, from 00:00 to 01:00 on 2026-11-26, time limit 3 h. Its
device samples, one a minute on each of the 8 GPUs, show GPUs 0-3 working (graphics engine 0.9) and GPUs 4-7, the
four it did not ask for, idle throughout. Hand-computed:
- the three rows load (rows in 3 = staged 3 + quarantined 0); before, the job's row was quarantined under
  gpus_allocated.at_most_requested and its 8 GPU-hours and 480 samples belonged to no job;
- it occupied 8 GPUs x 1 h = 8.0000 GPU-hours, at November's 2.4775 a GPU-hour 19.82; it requested 4 GPUs x 3 h =
  12.0000 GPU-hours; 4.0000 GPU-hours effective compute, 4.0000 idle, nothing unobserved;
- the idle GPUs are R24's over_requested: 4 GPUs x 3600 s = 14400 GPU-seconds, 19.82 x 4 / 8 = 9.91, and no other
  category (its working GPUs never idled, no step was discarded, no communication wait); B-8's over_requested
  saving grows by exactly 4.0000 GPU-hours and 9.91.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from cost_pipeline.cli import run_pipeline
from tests.helpers import DEVICE_SAMPLES_HEADER, query, sacct_text

pytestmark = pytest.mark.xdist_group("exclusive_nodes_night")

SACCT_FILE = "sacct_2026-11_exclusive.txt"
START, END = "2026-11-26T00:00:00", "2026-11-26T01:00:00"
JOB = {
    "JobID": "9501",
    "JobIDRaw": "9501",
    "JobName": "b8-exclusive",
    "Account": "post-training",
    "Partition": "gpu",
    "User": "trainer",
    "WCKey": "*",
    "State": "COMPLETED",
    "ExitCode": "0:0",
    "DerivedExitCode": "0:0",
    "Reason": "None",
    "FailedNode": "",
    "Restarts": "0",
    "Submit": "2026-11-25T23:55:00",
    "Eligible": "2026-11-25T23:55:00",
    "Start": START,
    "End": END,
    "Elapsed": "01:00:00",
    "Timelimit": "03:00:00",
    "NNodes": "1",
    "NodeList": "gpu-x",
    # --exclusive: the request is 4 GPUs, the allocation the node's 8 (and all its CPUs and memory).
    "ReqTRES": "billing=4,cpu=4,gres/gpu=4,mem=64G,node=1",
    "AllocTRES": "billing=8,cpu=8,gres/gpu=8,mem=512G,node=1",
    "Comment": "batch=B-8;phase=training;reason=planned_experiment",
    "AdminComment": "",
}


def _sacct() -> str:
    """The job and its steps as sacct writes them: a step has no ReqTRES, no time limit and no comment."""
    rows = [JOB]
    for step in ("batch", "extern"):
        rows.append(
            JOB
            | {"JobID": f"9501.{step}", "JobIDRaw": f"9501.{step}", "JobName": step, "Account": "post-training"}
            | {"Partition": "", "User": "", "WCKey": "", "Submit": START, "Eligible": START, "Timelimit": ""}
            | {"ReqTRES": "", "AllocTRES": "cpu=8,gres/gpu=8,mem=512G,node=1", "Comment": ""}
        )
    return sacct_text(rows)


def _samples() -> str:
    rows = [DEVICE_SAMPLES_HEADER]
    for minute in range(60):
        at = (datetime(2026, 11, 26) + timedelta(minutes=minute)).isoformat()
        for gpu in range(8):
            activity = "0.9,0.9,0.5,1000000.0,1000000.0,400.0" if gpu < 4 else "0.0,0.0,0.0,0.0,0.0,60.0"
            rows.append(f"{at},gpu-x,{gpu},9501,{activity}")
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def night(demo_run, tmp_path_factory):
    assert demo_run.succeeded
    root = tmp_path_factory.mktemp("exclusive_nodes_night")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    shutil.copyfile(demo_run.warehouse, warehouse)
    (landing / "scheduler" / SACCT_FILE).write_text(_sacct(), encoding="utf-8")
    (landing / "telemetry" / "dcgm_exclusive.csv").write_text(_samples(), encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()):
        assert run_pipeline(landing, warehouse)
    return warehouse


def test_an_exclusive_job_allocated_more_gpus_than_requested_loads(night):
    ledger = query(
        night,
        "select rows_in, rows_staged, rows_quarantined from raw.ingested_files where source_file like ?",
        [f"%{SACCT_FILE}"],
    )
    assert ledger == [(3, 3, 0)]
    assert query(night, "select count(*) from raw.quarantine where source_file like ?", [f"%{SACCT_FILE}"]) == [(0,)]
    assert query(
        night, "select job_id, gpus_requested, gpus_allocated from raw.scheduler_jobs where job_id like '9501%'"
    ) == [("9501", 4, 8), ("9501.batch", 0, 8), ("9501.extern", 0, 8)]


def test_it_is_charged_for_every_gpu_it_held(night):
    rows = query(
        night,
        "select gpus_requested, gpus_allocated, requested_gpu_hours, occupied_gpu_hours, effective_compute_gpu_hours, "
        "idle_gpu_hours, unobserved_gpu_hours, compute_cost from marts.fct_runs where job_id = '9501'",
    )
    hours = (Decimal("12.0000"), Decimal("8.0000"), Decimal("4.0000"), Decimal("4.0000"), Decimal("0.0000"))
    assert rows == [(4, 8, *hours, Decimal("19.82"))]
    samples = query(
        night,
        "select count(*) from intermediate.int_device_samples_tiered as samples "
        "inner join intermediate.int_jobs_costed as jobs on samples.job_key = jobs.job_key where jobs.job_id = '9501'",
    )
    assert samples == [(480,)]


def test_the_gpus_it_did_not_ask_for_and_left_idle_are_over_requested(night, demo_run):
    split = query(
        night,
        "select over_requested_gpu_seconds, over_requested_cost, idle_cost, discarded_steps_cost, "
        "comm_wait_excess_cost, avoidable_rerun_cost from intermediate.int_job_savings_split where job_id = '9501'",
    )
    zero = Decimal("0.00")
    assert split == [(14400.0, Decimal("9.91"), zero, zero, zero, zero)]

    def over_requested(warehouse):
        sql = (
            "select gpu_hours, amount from marts.fct_batch_savings "
            "where batch_id = 'B-8' and category = 'over_requested'"
        )
        ((gpu_hours, amount),) = query(warehouse, sql)
        return gpu_hours or Decimal(0), amount

    before, after = over_requested(demo_run.warehouse), over_requested(night)
    assert (after[0] - before[0], after[1] - before[1]) == (Decimal("4.0000"), Decimal("9.91"))
