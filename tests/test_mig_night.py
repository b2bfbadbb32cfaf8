"""A MIG job is charged its compute slices, not whole GPUs, over a whole night (docs/fractional_gpus.md).

The demo's landing folder (copied) gains one Slurm export as sacct writes it for a cluster with MIG (typed GRES
whose type ends in the profile, as Slurm's NVML autodetection names it), one Kubernetes job on a MIG instance, and
the MIG job's device samples (one per instance and minute, the GPU's power on each). Hand-computed:
- job 9102 holds two 1g.10gb instances of a 7-slice GPU for 7 h: 2 x 1/7 x 7 h = 2 GPU-hours, as much as job 9101's
  one whole GPU for 2 h, and it costs the same (the same month's price, rounded once to the cent per job);
- its 840 samples at 100 W stand for 60 s each of 1/7 of a GPU: 840 x 60 x 100 x 1/7 / 3.6e6 = 0.2 kWh, and its
  tiers count 2 GPU-hours, so nothing is unobserved;
- the Kubernetes job on one 3g.40gb instance for 7 h (its event names the resource, nvidia.com/mig-3g.40gb):
  3/7 x 7 h = 3 GPU-hours.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from cost_pipeline.cli import run_pipeline
from tests.helpers import DEVICE_SAMPLES_HEADER, query

pytestmark = pytest.mark.xdist_group("mig_night")

HEADER = (
    "JobID|JobIDRaw|JobName|Account|Partition|User|WCKey|State|ExitCode|DerivedExitCode|Reason|FailedNode|Restarts|"
    "Submit|Eligible|Start|End|Elapsed|Timelimit|NNodes|NodeList|ReqTRES|AllocTRES|Comment|AdminComment"
)
MIG_TRES = "billing=8,cpu=8,gres/gpu=2,gres/gpu:nvidia_a100-sxm4-80gb_1g.10gb=2,mem=64G,node=1"
WHOLE_TRES = "billing=8,cpu=8,gres/gpu=1,mem=64G,node=1"
LABELS = "batch=B-7;phase=exploration;reason=planned_experiment"


def _sacct_line(job: str, start: str, end: str, elapsed: str, tres: str) -> str:
    return (
        f"{job}|{job}|b7-mig|post-training|mig|trainer|*|COMPLETED|0:0|0:0|None||0|{start}|{start}|{start}|{end}|"
        f"{elapsed}|08:00:00|1|gpu-m|{tres}|{tres}|{LABELS}|"
    )


SACCT = "\n".join(
    [
        HEADER,
        _sacct_line("9101", "2026-11-20T00:00:00", "2026-11-20T02:00:00", "02:00:00", WHOLE_TRES),
        _sacct_line("9102", "2026-11-20T00:00:00", "2026-11-20T07:00:00", "07:00:00", MIG_TRES),
    ]
)
_EVENT = (
    '{{"job_id": "b7-mig-pod", "event": "{}", "at": "{}", "gpus_requested": 1, "gpus_allocated": 1, '
    '"gpu_instance_profile": "nvidia.com/mig-3g.40gb", "time_limit_s": 28800, {}"labels": {{"batch": "B-7", '
    '"phase": "exploration", "reason": "planned_experiment"}}}}'
)
EVENTS = "\n".join(
    _EVENT.format(event, at, state)
    for event, at, state in [
        ("submit", "2026-11-21T00:00:00Z", ""),
        ("start", "2026-11-21T00:00:00Z", ""),
        ("end", "2026-11-21T07:00:00Z", '"state": "Succeeded", '),
    ]
)


def _samples() -> str:
    header = DEVICE_SAMPLES_HEADER + ",gpu_instance_id,gpu_instance_profile"
    start = datetime(2026, 11, 20)
    rows = [header]
    for minute in range(7 * 60):
        at = (start + timedelta(minutes=minute)).isoformat()
        for instance in (7, 8):
            rows.append(f"{at},gpu-m,0,9102,0.9,0.9,0.5,1000000.0,1000000.0,100.0,{instance},1g.10gb")
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def night(demo_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("mig_night")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    shutil.copyfile(demo_run.warehouse, warehouse)
    (landing / "scheduler" / "sacct_2026-11_mig.txt").write_text(SACCT + "\n", encoding="utf-8")
    (landing / "scheduler" / "cloud_events_2026-11_mig.jsonl").write_text(EVENTS + "\n", encoding="utf-8")
    (landing / "telemetry" / "dcgm_mig.csv").write_text(_samples(), encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()):
        assert run_pipeline(landing, warehouse)
    return warehouse


def _runs(warehouse) -> dict[str, tuple]:
    rows = query(
        warehouse,
        "select job_id, gpus_allocated, mig_instances_allocated, gpu_instance_profile, allocated_gpu_equivalents, "
        "occupied_gpu_hours, effective_compute_gpu_hours + comm_wait_gpu_hours + idle_gpu_hours, "
        "unobserved_gpu_hours, compute_cost from marts.fct_runs where job_id in ('9101', '9102', 'b7-mig-pod')",
    )
    return {row[0]: row[1:] for row in rows}


def test_a_mig_job_holds_its_slices_not_whole_gpus(night):
    runs = _runs(night)
    gpus, instances, profile, equivalents, occupied, observed, unobserved, cost = runs["9102"]
    assert (gpus, instances, profile) == (2, 2, "1g.10gb")
    assert equivalents == pytest.approx(2 / 7)
    assert occupied == Decimal("2.0000")
    assert observed == Decimal("2.0000") and unobserved == Decimal("0.0000")
    whole = runs["9101"]
    assert whole[:4] == (1, 0, None, 1.0) and whole[4] == Decimal("2.0000")
    assert cost == whole[-1] and cost > 0  # the same GPU-hours in the same month, the same price


def test_a_kubernetes_job_on_a_mig_instance_holds_its_slices(night):
    gpus, instances, profile, equivalents, occupied, *_ = _runs(night)["b7-mig-pod"]
    assert (gpus, instances, profile) == (1, 1, "3g.40gb")
    assert equivalents == pytest.approx(3 / 7) and occupied == Decimal("3.0000")


def test_a_mig_jobs_energy_is_its_share_of_the_gpus(night):
    (kwh,) = query(
        night,
        "select sum(energy.gpu_kwh) from intermediate.int_job_energy_measured as energy "
        "inner join intermediate.int_jobs_costed as jobs on energy.job_key = jobs.job_key where jobs.job_id = '9102'",
    )[0]
    assert kwh == pytest.approx(0.2)
