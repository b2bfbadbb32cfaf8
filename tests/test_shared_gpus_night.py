"""A GPU shared by several jobs at once counts once, split among them, over a whole night (docs/fractional_gpus.md,
"Device time"; docs/energy.md).

The demo's landing folder (copied) gains, with a contract version that says 8 Slurm shards make a GPU:
- Slurm jobs 9401 and 9402 (batch B-8, training, NODE_FAIL), each on 4 of 8 shards (half a GPU) of node gpu-s
  from 00:00 to 02:00 on 2026-11-25, both labelled on GPU 0, one sample a minute each: graphics engine 0.9 until
  00:29, then 0.0; 400 W; three 10-minute steps each, the last ending at 00:30;
- Kubernetes pods ts-a, ts-b and ts-c (B-8, exploration, 1 GPU each) time-sharing GPU 0 of gpu-t from 00:00 to 01:00
  on 2026-11-22, one sample a minute each, 300 W;
- Kubernetes job kq-1 (B-8, training), 1 GPU for 1 h in October and 1 h in November, without a sample; and kq-2
  (B-8, training), 1 GPU from 00:00 to 01:00 on 2026-11-23, whose label the exporter put on two GPUs of gpu-v (one
  sample a minute each, 100 W): its samples stand for 2 GPU-hours, 1 more than it occupied.
Hand-computed:
- each shard job occupies 0.5 GPU x 2 h = 1.0 GPU-hour; its samples stand for 60 s each of half the GPU (two labels
  at each instant): 30 active = 0.25 GPU-hours effective, 90 idle = 0.75 GPU-hours idle, nothing unobserved;
- it failed: the idle time after its last step (00:30) is the hang, 90 min x 0.5 = 0.75 GPU-hours, which costs
  0.75 / 1.0 of its compute cost (2.48 at November's price): 1.86, and so is its avoidable idle time;
- energy: 400 W x 2 h x 0.5 = 0.4 kWh each, 0.8 kWh for the two, what GPU 0 of gpu-s drew (400 W x 2 h); each pod
  300 W x 1 h x 1/3 = 0.1 kWh, 0.3 kWh for the three, what GPU 0 of gpu-t drew; each job's tiers equal its share of
  its GPU in fct_gpu_shares;
- B-8 training: kq-1's 2 GPU-hours have no sample, and kq-2's surplus hour does not make up for them (summed over
  the phase it would, to 1.0000): 2.0000 unobserved GPU-hours, partly observed.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from datetime import datetime, timedelta
from decimal import Decimal
from importlib import resources

import pytest

from cost_pipeline.cli import run_pipeline
from cost_pipeline.contract import add_contract_directory, remove_contract_directory
from tests.helpers import DEVICE_SAMPLES_HEADER, query

pytestmark = pytest.mark.xdist_group("shared_gpus_night")

HEADER = (
    "JobID|JobIDRaw|JobName|Account|Partition|User|WCKey|State|ExitCode|DerivedExitCode|Reason|FailedNode|Restarts|"
    "Submit|Eligible|Start|End|Elapsed|Timelimit|NNodes|NodeList|ReqTRES|AllocTRES|Comment|AdminComment"
)
SHARD_TRES = "billing=8,cpu=8,gres/shard=4,mem=64G,node=1"
LABELS = "batch=B-8;phase=training;reason=planned_experiment"
SHARD_START, SHARD_END = "2026-11-25T00:00:00", "2026-11-25T02:00:00"
SACCT = "\n".join(
    [HEADER]
    + [
        f"{job}|{job}|b8-shard|post-training|gpu|trainer|*|NODE_FAIL|0:0|0:0|None||0|{SHARD_START}|{SHARD_START}|"
        f"{SHARD_START}|{SHARD_END}|02:00:00|08:00:00|1|gpu-s|{SHARD_TRES}|{SHARD_TRES}|{LABELS}|"
        for job in ("9401", "9402")
    ]
)
PODS = ("ts-a", "ts-b", "ts-c")
SHARD_JOBS = ("9401", "9402")


def _event(job: str, event: str, at: str, phase: str, **extra) -> str:
    labels = {"batch": "B-8", "phase": phase, "reason": "planned_experiment"}
    return json.dumps(
        {"job_id": job, "event": event, "at": at, "gpus_requested": 1, "gpus_allocated": 1, "time_limit_s": 7200}
        | extra
        | {"labels": labels}
    )


def _events() -> str:
    lines = []
    for pod in PODS:
        lines += [
            _event(pod, "submit", "2026-11-22T00:00:00Z", "exploration"),
            _event(pod, "start", "2026-11-22T00:00:00Z", "exploration"),
            _event(pod, "end", "2026-11-22T01:00:00Z", "exploration", state="Succeeded"),
        ]
    lines += [
        _event("kq-1", "submit", "2026-10-31T20:00:00Z", "training"),
        _event("kq-1", "start", "2026-10-31T22:00:00Z", "training"),
        _event("kq-1", "preempt", "2026-10-31T23:00:00Z", "training"),
        _event("kq-1", "start", "2026-11-02T00:00:00Z", "training"),
        _event("kq-1", "end", "2026-11-02T01:00:00Z", "training", state="Succeeded"),
        _event("kq-2", "submit", "2026-11-23T00:00:00Z", "training"),
        _event("kq-2", "start", "2026-11-23T00:00:00Z", "training"),
        _event("kq-2", "end", "2026-11-23T01:00:00Z", "training", state="Succeeded"),
    ]
    return "\n".join(lines) + "\n"


def _samples() -> str:
    rows = [DEVICE_SAMPLES_HEADER]
    for minute in range(60):
        at = (datetime(2026, 11, 22) + timedelta(minutes=minute)).isoformat()
        rows += [f"{at},gpu-t,0,{pod},0.9,0.9,0.5,1000000.0,1000000.0,300.0" for pod in PODS]
        at = (datetime(2026, 11, 23) + timedelta(minutes=minute)).isoformat()
        rows += [f"{at},gpu-v,{gpu},kq-2,0.9,0.9,0.5,1000000.0,1000000.0,100.0" for gpu in (0, 1)]
    for minute in range(120):
        at = (datetime(2026, 11, 25) + timedelta(minutes=minute)).isoformat()
        activity = "0.9,0.9,0.5" if minute < 30 else "0.0,0.0,0.0"
        rows += [f"{at},gpu-s,0,{job},{activity},1000000.0,1000000.0,400.0" for job in SHARD_JOBS]
    return "\n".join(rows) + "\n"


def _steps() -> str:
    steps = []
    for job in SHARD_JOBS:
        for step in range(3):
            started = datetime(2026, 11, 25) + timedelta(minutes=10 * step)
            steps.append(
                json.dumps(
                    {
                        "batch_id": "B-8",
                        "job_id": job,
                        "step": step + 1,
                        "started_at": started.isoformat(),
                        "ended_at": (started + timedelta(minutes=10)).isoformat(),
                        "committed": True,
                        "discarded_reason": None,
                        "samples": 512,
                        "tokens": 1000,
                        "config_version": "rl-cfg-14",
                        "data_version": "prefs-2026-11",
                    }
                )
            )
    return "\n".join(steps) + "\n"


@pytest.fixture(scope="module")
def night(demo_run, tmp_path_factory):
    root = tmp_path_factory.mktemp("shared_gpus_night")
    v1 = resources.files("cost_pipeline.contract").joinpath("definitions_v1.yaml").read_text(encoding="utf-8")
    v2 = v1.replace("version: v1", "version: v2", 1).replace("# slurm_shards_per_gpu: 8", "slurm_shards_per_gpu: 8", 1)
    assert "  slurm_shards_per_gpu: 8" in v2 and "# slurm_shards_per_gpu" not in v2
    contracts = root / "contracts"
    contracts.mkdir()
    (contracts / "definitions_v2.yaml").write_text(v2, encoding="utf-8")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    shutil.copyfile(demo_run.warehouse, warehouse)
    (landing / "scheduler" / "sacct_2026-11_shards.txt").write_text(SACCT + "\n", encoding="utf-8")
    (landing / "scheduler" / "events_2026-11_shared.jsonl").write_text(_events(), encoding="utf-8")
    (landing / "telemetry" / "dcgm_shared.csv").write_text(_samples(), encoding="utf-8")
    (landing / "steps" / "steps_shards.jsonl").write_text(_steps(), encoding="utf-8")
    add_contract_directory(contracts)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert run_pipeline(landing, warehouse)
    finally:
        remove_contract_directory(contracts)
    return warehouse


def test_jobs_sharing_a_gpu_split_its_time(night):
    rows = query(
        night,
        "select job_id, occupied_gpu_hours, effective_compute_gpu_hours, comm_wait_gpu_hours, idle_gpu_hours, "
        "unobserved_gpu_hours, compute_cost from marts.fct_runs where job_id in ('9401', '9402') order by job_id",
    )
    expected = (Decimal("1.0000"), Decimal("0.2500"), Decimal("0.0000"), Decimal("0.7500"), Decimal("0.0000"))
    assert [row[1:6] for row in rows] == [expected, expected]
    assert [row[6] for row in rows] == [Decimal("2.48"), Decimal("2.48")]


def test_a_hang_on_a_shared_gpu_is_the_jobs_share(night):
    waiting = query(
        night,
        "select job_id, hang_after_fault_gpu_seconds, hang_after_fault_cost from intermediate.int_job_waiting_measured "
        "where job_id in ('9401', '9402') order by job_id",
    )
    assert waiting == [("9401", 2700.0, Decimal("1.86")), ("9402", 2700.0, Decimal("1.86"))]
    savings = query(
        night,
        "select job_id, idle_gpu_seconds, idle_cost from intermediate.int_job_savings_split "
        "where job_id in ('9401', '9402') order by job_id",
    )
    assert savings == [("9401", 2700.0, Decimal("1.86")), ("9402", 2700.0, Decimal("1.86"))]


def test_the_jobs_sharing_a_gpu_draw_its_energy_once(night):
    energy = dict(
        query(
            night,
            "select jobs.job_id, sum(energy.gpu_kwh) from intermediate.int_job_energy_measured as energy "
            "inner join intermediate.int_jobs_costed as jobs on energy.job_key = jobs.job_key "
            "where jobs.job_id in ('9401', '9402', 'ts-a', 'ts-b', 'ts-c') group by jobs.job_id",
        )
    )
    assert energy == pytest.approx({"9401": 0.4, "9402": 0.4, "ts-a": 0.1, "ts-b": 0.1, "ts-c": 0.1})
    # Together, what each GPU drew: 400 W x 2 h and 300 W x 1 h.
    assert energy["9401"] + energy["9402"] == pytest.approx(0.8)
    assert sum(energy[pod] for pod in PODS) == pytest.approx(0.3)


def test_each_jobs_tiers_are_its_share_in_fct_gpu_shares(night):
    tiers = query(
        night,
        "select jobs.job_id, round(sum(tiered.represented_gpu_seconds) / 3600, 6) "
        "from intermediate.int_device_samples_tiered as tiered "
        "inner join intermediate.int_jobs_costed as jobs on tiered.job_key = jobs.job_key "
        "where jobs.job_id in ('9401', '9402', 'ts-a', 'ts-b', 'ts-c') group by jobs.job_id order by jobs.job_id",
    )
    shares = query(
        night,
        "select jobs.job_id, round(sum(shares.gpu_hours), 6) from marts.fct_gpu_shares as shares "
        "inner join intermediate.int_jobs_costed as jobs on shares.job_key = jobs.job_key "
        "where jobs.job_id in ('9401', '9402', 'ts-a', 'ts-b', 'ts-c') group by jobs.job_id order by jobs.job_id",
    )
    assert tiers == shares
    assert [hours for _, hours in tiers] == pytest.approx([1.0, 1.0, 1 / 3, 1 / 3, 1 / 3], abs=1e-6)


def test_one_jobs_surplus_never_hides_anothers_unobserved_time(night):
    (row,) = query(
        night,
        "select unobserved_gpu_hours, energy_evidence from marts.fct_batch_energy "
        "where batch_id = 'B-8' and phase = 'training'",
    )
    assert row == (Decimal("2.0000"), "partly_observed")
