"""A Slurm job that ran on GPUs whose sacct record names none (slurm.conf's AccountingStorageTRES without gres/gpu, as
in the Hábrók capture's 2023 jobs) loads as 0 GPUs; the night warns, naming it (issue 10: no silent wrong figure).

The demo's landing folder (copied) gains a sacct --parsable2 export of three jobs, 02:00 to 03:00 on 2026-11-26, each
on its own host, none of whose ReqTRES or AllocTRES names a GPU (billing=16,cpu=16,mem=128G,node=1):
- 9701 on gpu-u, whose GPUs 0 and 1 report work every minute (graphics engine 0.9) in samples without a job label
  (the exporter's job mapping comes from Slurm, which gave the job no GPU);
- 9702 on cpu-v, a CPU host: no device samples;
- 9703 on gpu-w, whose GPU 0 reports every minute, idle (graphics engine 0.0): an honest CPU job on a GPU node.
Hand-computed: every sample of gpu-u and gpu-w is GPU time no job claims (host_has_unallocated_gpus: the host reported
more GPUs than its one job was allocated, none), each a minute to its GPU's next, the last one the nominal minute (no
later sample): gpu-u 2 GPUs x 1 h = 2.0 GPU-hours effective compute, gpu-w 1.0 GPU-hour idle. The warn test
jobs_allocated_no_gpu_beside_gpu_work lists 9701 alone, on gpu-u, 2 GPUs that worked, 2.0 GPU-hours; the night exits
0, and no figure moves: the three jobs occupy and cost nothing, every batch's cost is the demo's, and the GPU time no
job claims grows by exactly those 3.0 GPU-hours.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from tests.helpers import DEVICE_SAMPLES_HEADER, query, sacct_text
from tests.test_exclusive_nodes import JOB

pytestmark = pytest.mark.xdist_group("jobs_without_recorded_gpus_night")

START, END = "2026-11-26T02:00:00", "2026-11-26T03:00:00"
TRES = "billing=16,cpu=16,mem=128G,node=1"  # AccountingStorageTRES without gres/gpu: no GPU whatever the job held
HOSTS = {"9701": "gpu-u", "9702": "cpu-v", "9703": "gpu-w"}
WORKING, IDLE = "0.9,0.9,0.5,1000000.0,1000000.0,400.0", "0.0,0.0,0.0,0.0,0.0,60.0"
WARNING = (
    "warning: dbt test jobs_allocated_no_gpu_beside_gpu_work on intermediate/int_unattributed_gpu_days returned "
    "1 failing row, stored in audit.jobs_allocated_no_gpu_beside_gpu_work (warn severity: the night goes on)"
)


def _sacct() -> str:
    """The three jobs as sacct writes a job (test_exclusive_nodes' record), each on its host, naming no GPU."""
    return sacct_text(
        JOB
        | {"JobID": job_id, "JobIDRaw": job_id, "JobName": f"b8-{host}", "NodeList": host, "Timelimit": "02:00:00"}
        | {"Submit": "2026-11-26T01:55:00", "Eligible": "2026-11-26T01:55:00", "Start": START, "End": END}
        | {"ReqTRES": TRES, "AllocTRES": TRES, "Comment": "batch=B-8;phase=analysis;reason=planned_experiment"}
        for job_id, host in HOSTS.items()
    )


def _samples() -> str:
    """One sample a minute of gpu-u's GPUs 0 and 1 (working) and gpu-w's GPU 0 (idle), without a job label."""
    rows = [DEVICE_SAMPLES_HEADER]
    for minute in range(60):
        at = (datetime.fromisoformat(START) + timedelta(minutes=minute)).isoformat()
        rows += [f"{at},gpu-u,{gpu},,{WORKING}" for gpu in (0, 1)]
        rows.append(f"{at},gpu-w,0,,{IDLE}")
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def night(demo_run, tmp_path_factory):
    files = {"scheduler/sacct_2026-11_no_gpu_tres.txt": _sacct(), "telemetry/dcgm_no_gpu_tres.csv": _samples()}
    return demo_run.night_with(tmp_path_factory.mktemp("jobs_without_recorded_gpus") / "night", files)


def test_the_night_warns_naming_the_job_whose_host_s_gpus_worked(night):
    assert night.code == 0, night.err
    assert WARNING in night.out.splitlines()
    listed = query(
        night.warehouse,
        "select job_id, batch_id, start_at, end_at, hostname, gpus_that_worked, worked_gpu_hours "
        "from audit.jobs_allocated_no_gpu_beside_gpu_work",
    )
    assert listed == [("9701", "B-8", datetime(2026, 11, 26, 2), datetime(2026, 11, 26, 3), "gpu-u", 2, 2.0)]


def test_the_demo_warns_of_no_such_job(demo_run):
    """The demo's samples all carry their job's label: nothing is listed, and no line says so."""
    assert demo_run.query("select count(*) from audit.jobs_allocated_no_gpu_beside_gpu_work") == [(0,)]


def test_no_figure_moves(night, demo_run):
    runs = query(
        night.warehouse,
        "select job_id, gpus_allocated, occupied_gpu_hours, compute_cost from marts.fct_runs "
        "where job_id in ('9701', '9702', '9703') order by job_id",
    )
    assert runs == [(job_id, 0, Decimal("0.0000"), Decimal("0.00")) for job_id in HOSTS]
    costs = "select * from marts.fct_batch_costs order by all"
    assert query(night.warehouse, costs) == demo_run.query(costs)
    unclaimed = (
        "select tier, reason, sum(gpu_hours) from marts.fct_unattributed_gpu_hours group by tier, reason order by all"
    )
    before = {(tier, reason): hours for tier, reason, hours in demo_run.query(unclaimed)}
    after = {(tier, reason): hours for tier, reason, hours in query(night.warehouse, unclaimed)}
    grown = {key: hours - before.get(key, 0) for key, hours in after.items() if hours != before.get(key)}
    reason = "host_has_unallocated_gpus"
    assert grown == {("effective_compute", reason): 2.0, ("idle", reason): 1.0}
