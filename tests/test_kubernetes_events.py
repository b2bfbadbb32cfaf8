"""Kubernetes-style job events go through the same marts as sacct: occupation per start-to-stop segment,
restarts, lineage and repeated same-cause failures."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.cli import run_pipeline
from cost_pipeline.contract import load_contract
from cost_pipeline.contract.schemas import scheduler_events
from cost_pipeline.ingest.lib.records import ParsedFile
from cost_pipeline.ingest.lib.validate import validate_rows
from cost_pipeline.ingest.registry import sources
from tests.conftest import DemoRun
from tests.helpers import one_batch_landing, partial_night, query, scrape_metrics

pytestmark = pytest.mark.xdist_group("kubernetes_events")

# kp-1 preempted and not started again; kp-2 preempted and running again; kp-3's submit is the stream's newest event.
PREEMPTED_EVENTS = [
    ("kp-1", "submit", "2026-11-26T00:00:00", 8),
    ("kp-1", "start", "2026-11-26T00:10:00", 8),
    ("kp-1", "preempt", "2026-11-26T01:10:00", 8),
    ("kp-2", "submit", "2026-11-26T01:30:00", 1),
    ("kp-2", "start", "2026-11-26T02:00:00", 1),
    ("kp-2", "preempt", "2026-11-26T03:00:00", 1),
    ("kp-2", "start", "2026-11-26T04:00:00", 1),
    ("kp-3", "submit", "2026-11-26T07:00:00", 1),
]


def _event(job_id: str, event: str, at: str, **extra: object) -> str:
    labels = {"batch": "B-1", "phase": "training", "reason": "planned_experiment"}
    labels.update(extra.pop("labels", {}))
    return json.dumps(
        {
            "job_id": job_id,
            "event": event,
            "at": at,
            "gpus_requested": 4,
            "gpus_allocated": 4,
            "time_limit_s": 7200,
            "labels": labels,
            **extra,
        }
    )


def _jobs_k1_to_k3_of_b1(landing: Path) -> None:
    """k1 preempted, requeued and out of memory, k2 its retry (also out of memory), k3 running, all B-1's,
    on 3 November: k3's start is the landing's newest event (test_kubernetes_jobs_reach_the_marts)."""
    retry = {"reason": "failure_retry", "restart_of": "k1"}
    (landing / "scheduler" / "events_reach_the_marts.jsonl").write_text(
        "\n".join(
            [
                _event("k1", "submit", "2026-11-03T00:00:00"),
                _event("k1", "start", "2026-11-03T01:00:00"),
                _event("k1", "preempt", "2026-11-03T02:00:00"),
                _event("k1", "requeue", "2026-11-03T02:30:00"),
                _event("k1", "start", "2026-11-03T03:00:00"),
                _event("k1", "end", "2026-11-03T04:00:00", state="OOMKilled"),
                _event("k2", "start", "2026-11-03T05:00:00", labels=retry),
                _event("k2", "end", "2026-11-03T06:00:00", state="OOMKilled", labels=retry),
                _event("k3", "start", "2026-11-03T07:00:00"),
            ]
        )
        + "\n",
        encoding="utf-8",
    )


def test_kubernetes_jobs_reach_the_marts(small_landing_night: Path):
    warehouse = small_landing_night
    con = duckdb.connect(str(warehouse), read_only=True)
    runs = {
        r[0]: r[1:]
        for r in con.execute("""
        select job_id, scheduler, state, termination_reason, termination_category, restarts, occupied_gpu_hours,
               is_repeated_same_cause, lineage_job_found, requested_gpu_hours
        from marts.fct_runs""").fetchall()
    }
    failures = con.execute(
        "select termination_category, failed_jobs, repeated_same_cause_jobs, failed_gpu_hours "
        "from marts.fct_batch_failures where batch_id = 'B-1'"
    ).fetchall()
    con.close()
    # k1 held 4 GPUs 01:00-02:00 and 03:00-04:00: the preemption gap is not occupied.
    assert runs["k1"] == (
        "kubernetes",
        "OUT_OF_MEMORY",
        "out_of_memory",
        "scheduler_limit",
        1,
        Decimal(8),
        True,
        None,
        Decimal(8),
    )
    assert runs["k2"][5:8] == (Decimal(4), True, True)
    assert runs["k3"][1:4] == ("RUNNING", "running", "running") and runs["k3"][5] == 0
    assert failures == [("scheduler_limit", 2, 2, Decimal(12))]


def _running_jobs_kr1_kr2_r_of_b3_on_cluster_kc(landing: Path) -> None:
    """Batch B-3 in the registry; kr1 running, kr2 ended and r submitted twice, B-3's, on cluster kc (a stream of its
    own), on 2 November (test_a_running_kubernetes_job_has_occupied_its_gpus_until_its_streams_newest_event)."""
    (landing / "registry" / "batches.csv").write_text(
        (landing / "registry" / "batches.csv").read_text(encoding="utf-8") + "B-3,p,g,t,d,m,c,cfg,v1,,,,,\n",
        encoding="utf-8",
    )
    b3 = {"cluster": "kc", "labels": {"batch": "B-3"}}
    (landing / "scheduler" / "events_running.jsonl").write_text(
        "\n".join(
            [
                _event("kr1", "submit", "2026-11-02T01:00:00", **b3),
                _event("kr1", "start", "2026-11-02T01:00:00", **b3),
                _event("kr2", "start", "2026-11-02T02:00:00", **b3),
                _event("kr2", "end", "2026-11-02T05:00:00", state="Succeeded", **b3),
                _event("r", "submit", "2026-11-02T00:00:00", **b3),
                _event("r", "start", "2026-11-02T00:00:00", **b3),
                _event("r", "submit", "2026-11-02T03:00:00", **b3),
                _event("r", "start", "2026-11-02T03:30:00", **b3),
            ]
        )
        + "\n",
        encoding="utf-8",
    )


def test_a_running_kubernetes_job_has_occupied_its_gpus_until_its_streams_newest_event(small_landing_night: Path):
    """A job whose last event is a start holds its GPUs until the newest event of its cluster's stream (any job's):
    the stream was exported after it and shows no end. A run whose name was submitted again since was seen running
    at its start only (its end was never exported). Cluster kc's stream ends at kr2's end, 2 November 05:00 (the
    other sets' stream, of no cluster, on 3 November)."""
    warehouse = small_landing_night
    runs = query(
        warehouse,
        "select job_id, start_at, state, is_running, running_seen_at, occupied_gpu_hours from marts.fct_runs "
        "where job_id in ('kr1', 'kr2', 'r') order by job_id, start_at",
    )
    seen = datetime(2026, 11, 2, 5)
    # 4 GPUs each: kr1 01:00-05:00 (16 GPU-hours), kr2 02:00-05:00 ended (12), r's second run 03:30-05:00 (6).
    assert runs == [
        ("kr1", datetime(2026, 11, 2, 1), "RUNNING", True, seen, Decimal(16)),
        ("kr2", datetime(2026, 11, 2, 2), "COMPLETED", False, None, Decimal(12)),
        ("r", datetime(2026, 11, 2), "RUNNING", True, datetime(2026, 11, 2), Decimal(0)),
        ("r", datetime(2026, 11, 2, 3, 30), "RUNNING", True, seen, Decimal(6)),
    ]
    assert query(
        warehouse, "select occupied_gpu_hours, running_jobs from marts.fct_batch_compute where batch_id = 'B-3'"
    ) == [(Decimal(34), 3)]


def _scrape_lines(host: str, gpu: int, pod: str, at: datetime) -> list[str]:
    """One dcgm-exporter scrape of a GPU held by a Kubernetes pod (an effective_compute sample), stamped in ms."""
    metrics = {
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.93,
        "DCGM_FI_PROF_SM_ACTIVE": 0.81,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.42,
        "DCGM_FI_PROF_NVLINK_TX_BYTES": 1.5e9,
        "DCGM_FI_PROF_NVLINK_RX_BYTES": 0.5e9,
        "DCGM_FI_DEV_POWER_USAGE": 650.5,
    }
    labels = f'gpu="{gpu}",Hostname="{host}",container="main",namespace="ml",pod="{pod}"'
    return [f"{metric}{{{labels}}} {value} {int(at.timestamp() * 1000)}" for metric, value in metrics.items()]


def _indexed_job_train_b7_and_a_job_named_train_b7_3(landing: Path) -> None:
    """train-b7, an Indexed Job, and train-b7-3, with dcgm-exporter scrapes of their pods on node-01 and node-02, the
    landing's only telemetry (test_an_indexed_jobs_pods_samples_are_its_own)."""
    # train-b7, an Indexed Job of two completions on two GPUs, and a Job named train-b7-3 on one, both 01:00-01:10.
    (landing / "scheduler" / "events_indexed_job.jsonl").write_text(
        "\n".join(
            line
            for job, gpus in (("train-b7", 2), ("train-b7-3", 1))
            for line in (
                _event(job, "start", "2026-11-02T01:00:00", gpus_requested=gpus, gpus_allocated=gpus),
                _event(job, "end", "2026-11-02T01:10:00", gpus_requested=gpus, gpus_allocated=gpus, state="Succeeded"),
            )
        )
        + "\n",
        encoding="utf-8",
    )
    # A scrape a minute from 01:00 to 01:09: node-01's GPUs 0 and 1 run train-b7's completion indexes 0 and 1,
    # node-02's GPU 0 runs train-b7-3's pod.
    (landing / "telemetry").mkdir()
    start = datetime(2026, 11, 2, 1, 0, tzinfo=UTC)
    pods = (("node-01", 0, "train-b7-0-x7k2p"), ("node-01", 1, "train-b7-1-a1b2c"), ("node-02", 0, "train-b7-3-q9w8e"))
    for host in ("node-01", "node-02"):
        lines = [
            line
            for minute in range(10)
            for pod_host, gpu, pod in pods
            if pod_host == host
            for line in _scrape_lines(host, gpu, pod, start + timedelta(minutes=minute))
        ]
        (landing / "telemetry" / f"{host}.prom").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _namespaced_requested_complete_and_shrunk_jobs(landing: Path) -> None:
    """Batch B-2 in the registry; k-req, team-a/eval, team-b/eval (B-2's), k-wait and k-shrink
    (test_kubernetes_jobs_are_namespaced_allocated_their_request_and_complete)."""
    (landing / "registry" / "batches.csv").write_text(
        (landing / "registry" / "batches.csv").read_text(encoding="utf-8") + "B-2,p,g,t,d,m,c,cfg,v1,,,,,\n",
        encoding="utf-8",
    )

    def line(job: str, event: str, at: str, gpus: int, namespace: str | None = None, **extra: object) -> str:
        record = json.loads(_event(job, event, at, gpus_requested=gpus, **extra))
        del record["gpus_allocated"]
        return json.dumps(record | ({"namespace": namespace} if namespace else {}))

    b2 = {"labels": {"batch": "B-2"}}
    (landing / "scheduler" / "events_namespaced.jsonl").write_text(
        "\n".join(
            [
                line("k-req", "start", "2026-11-02T04:00:00", 8),
                line("k-req", "end", "2026-11-02T08:00:00", 8, state="Succeeded"),
                line("eval", "start", "2026-11-02T01:00:00", 4, "team-a"),
                line("eval", "end", "2026-11-02T03:00:00", 4, "team-a", state="Succeeded"),
                line("eval", "start", "2026-11-02T01:30:00", 2, "team-b", **b2),
                line("eval", "end", "2026-11-02T02:30:00", 2, "team-b", state="Complete", **b2),
                line("k-wait", "submit", "2026-11-02T09:00:00", 1),
                line("k-shrink", "start", "2026-10-31T14:00:00", 8),
                line("k-shrink", "preempt", "2026-11-01T00:00:00", 8),
                line("k-shrink", "start", "2026-11-01T12:00:00", 1),
                line("k-shrink", "end", "2026-11-01T22:00:00", 1, state="Succeeded"),
            ]
        )
        + "\n",
        encoding="utf-8",
    )


@pytest.fixture(scope="module")
def small_landing_night(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The warehouse after one night on a landing of one batch (B-1) with four independent sets of Kubernetes jobs,
    each in an events file of its own, its jobs named apart. Three are in no cluster (one stream): their only running
    job, k3, starts at that stream's newest event (3 November, after the other sets' 31 October to 2 November), so it
    has occupied nothing yet, as on a landing of its own set. The fourth, the running jobs of batch B-3, is on cluster
    kc, a stream of its own ending on 2 November as on a landing of its own. Each test reads its own jobs."""
    landing = one_batch_landing(tmp_path_factory.mktemp("small_landing"))
    _jobs_k1_to_k3_of_b1(landing)
    _indexed_job_train_b7_and_a_job_named_train_b7_3(landing)
    _namespaced_requested_complete_and_shrunk_jobs(landing)
    _running_jobs_kr1_kr2_r_of_b3_on_cluster_kc(landing)
    warehouse = landing.parent / "warehouse.duckdb"
    assert run_pipeline(landing, warehouse)
    return warehouse


def test_an_indexed_jobs_pods_samples_are_its_own(small_landing_night: Path):
    """An Indexed Job's pods are <job>-<completion index>-<5 characters>: their samples are the Job's, while a Job
    really named <job>-<digits> keeps its own (an exact name wins)."""
    warehouse = small_landing_night
    runs = query(
        warehouse,
        "select job_id, samples, occupied_gpu_hours, effective_compute_gpu_hours, unobserved_gpu_hours "
        "from marts.fct_runs where job_id like 'train-b7%' order by job_id",
    )
    unattributed = query(warehouse, "select reason, samples from marts.fct_unattributed_gpu_hours")
    # Each sample stands for the 60 s to its GPU's next one (the last to the job's end at 01:10): train-b7's two
    # GPUs 10 samples x 60 s each, 1,200 GPU-seconds = 0.3333 GPU-hours, all effective compute (engine 0.93), none
    # unobserved; train-b7-3's one GPU 600 GPU-seconds = 0.1667 GPU-hours. No sample is left unattributed.
    assert runs == [
        ("train-b7", 20, Decimal("0.3333"), Decimal("0.3333"), Decimal(0)),
        ("train-b7-3", 10, Decimal("0.1667"), Decimal("0.1667"), Decimal(0)),
    ]
    assert unattributed == []


# The demo's capacity: October 29,376.98 over 16 GPUs x 744 h = 11,904 GPU-hours (2.4678 a GPU-hour), November
# 28,540.82 over 11,520 (2.4775). The jobs below are on the demo's stream of no cluster (its own Kubernetes job is on
# the cloud's), in batch B-8.
# kx holds kp-2's GPU in its gap (test_a_running_or_preempted_kubernetes_jobs_samples_are_its_own_night_by_night).
KX_EVENTS = [
    ("kx", "submit", "2026-11-26T03:00:00", 1),
    ("kx", "start", "2026-11-26T03:00:00", 1),
    ("kx", "end", "2026-11-26T03:10:00", 1, "Succeeded"),
]
# kq-1 is preempted across a month boundary (test_a_kubernetes_job_preempted_across_a_month_boundary_is_split_by_its_
# segments): it ended on 2 November, long before the other jobs' 26 November, so it changes none of their figures.
KQ_EVENTS = [
    ("kq-1", "submit", "2026-10-31T21:00:00", 1),
    ("kq-1", "start", "2026-10-31T22:00:00", 1),
    ("kq-1", "preempt", "2026-10-31T23:00:00", 1),
    ("kq-1", "start", "2026-11-02T00:00:00", 1),
    ("kq-1", "end", "2026-11-02T01:00:00", 1, "Succeeded"),
]


def _write_b8_events(landing: Path, events: list[tuple], file: str) -> None:
    """``events`` (job, event, at, GPUs[, state]) of B-8's analysis in scheduler/``file``."""
    b8 = {"batch": "B-8", "phase": "analysis"}
    lines = [
        _event(
            job, kind, at, gpus_requested=gpus, gpus_allocated=gpus, labels=b8, **({"state": rest[0]} if rest else {})
        )
        for job, kind, at, gpus, *rest in events
    ]
    (landing / "scheduler" / file).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _pod_scrapes(pod: str, gpu: int, first: datetime, effective: bool) -> list[str]:
    """Ten dcgm-exporter scrapes of GPU ``gpu`` of node-k held by ``pod``, a minute apart from ``first``: effective
    (engine 0.93) or idle (engine 0.05), no NVLink traffic."""
    labels = f'gpu="{gpu}",Hostname="node-k",container="main",namespace="ml",pod="{pod}"'
    metrics = scrape_metrics(effective, 500)
    return [
        f"{metric}{{{labels}}} {value} {int((first + timedelta(minutes=minute)).timestamp() * 1000)}"
        for minute in range(10)
        for metric, value in metrics.items()
    ]


# The raw assets of the sources B-8's nights add files to: the event streams (both nights) and the dcgm-exporter
# scrapes (night 1).
EVENTS, SCRAPES = ("raw", "scheduler_events"), ("raw", "device_samples_dcgm")


def _night_after(landing: Path, warehouse: Path, changed: tuple[tuple[str, ...], ...]) -> None:
    """The night after ``warehouse``'s whose ``changed`` sources' files changed, as ``cost-pipeline run`` runs it and
    exits 0 (``partial_night``): their raw assets and every asset of the nightly job downstream of them (the runs,
    their samples' tiers and the capacity reconciliation among them); the rest reads nothing the change touches and
    stays as the night before built it."""
    read = (
        "marts/fct_runs",
        "marts/fct_capacity_reconciliation",
        "intermediate/int_device_samples_attributed",
        "intermediate/int_device_samples_tiered",
        "intermediate/int_job_months_costed",
    )
    night = partial_night(landing, warehouse, changed, covering=read)
    assert night.code == 0, night.out


@pytest.fixture(scope="module")
def b8_nights(demo_run: DemoRun, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two nights after the demo's, on a copy of it: night 1 with B-8's preempted jobs kp-1 to kp-3 (PREEMPTED_EVENTS),
    kx, node-k's telemetry and kq-1 (three independent scenarios: each test reads its own jobs), night 2 adding only
    events (kp-3's start, kp-1's late-exported preemption). A copy of the warehouse after night 1, and the warehouse
    after night 2. Each night runs only what its changed sources feed (``_night_after``)."""
    demo = demo_run.copy_to(tmp_path_factory.mktemp("b8_nights") / "demo")
    landing, warehouse = demo / "landing", demo / "warehouse.duckdb"
    lines = _pod_scrapes("kp-1-x7k2p", 0, datetime(2026, 11, 26, 0, 10, tzinfo=UTC), effective=True)
    lines += _pod_scrapes("kp-2-q9w8e", 1, datetime(2026, 11, 26, 2, 50, tzinfo=UTC), effective=True)
    lines += _pod_scrapes("kx-h4j5k", 1, datetime(2026, 11, 26, 3, tzinfo=UTC), effective=True)
    lines += _pod_scrapes("kp-2-q9w8e", 1, datetime(2026, 11, 26, 3, 20, tzinfo=UTC), effective=True)
    lines += _pod_scrapes("kp-2-q9w8e", 1, datetime(2026, 11, 26, 5, tzinfo=UTC), effective=False)
    lines += _pod_scrapes("kp-2-q9w8e", 1, datetime(2026, 11, 26, 8, tzinfo=UTC), effective=True)
    (landing / "telemetry" / "node-k.prom").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _write_b8_events(landing, PREEMPTED_EVENTS + KX_EVENTS, "k8s_b8.jsonl")
    _write_b8_events(landing, KQ_EVENTS, "k8s_b8_kq.jsonl")
    _night_after(landing, warehouse, (EVENTS, SCRAPES))
    night_1 = demo / "night_1.duckdb"
    shutil.copyfile(warehouse, night_1)
    _write_b8_events(
        landing,
        [
            ("kp-3", "start", "2026-11-26T09:00:00", 1),
            ("kp-1", "preempt", "2026-11-26T00:15:00", 8),
            ("kp-1", "start", "2026-11-26T00:50:00", 8),
        ],
        "k8s_b8_2.jsonl",
    )
    _night_after(landing, warehouse, (EVENTS,))
    return night_1, warehouse


def _capacity(warehouse: Path) -> list[tuple]:
    """Each month's training GPU-hours and capacity cost, allocated plus idle, and what is left unreconciled."""
    return query(
        warehouse,
        "select month, training_gpu_hours, allocated_plus_idle_cost, capacity_cost, unreconciled_cost "
        "from marts.fct_capacity_reconciliation order by month",
    )


# Night 1's capacity reconciliation: each month's capacity cost still allocated to the cent, October's training hours
# kq-1's 1, November's the demo's 368 + kp-1's 8 + kp-2's 4 + kx's 0.1667 + kq-1's 1 = 381.1667.
NIGHT_1_CAPACITY = [
    (date(2026, 10, 1), Decimal(1), Decimal("29376.98"), Decimal("29376.98"), Decimal("0.00")),
    (date(2026, 11, 1), Decimal("381.1667"), Decimal("28540.82"), Decimal("28540.82"), Decimal("0.00")),
]


def test_a_preempted_kubernetes_job_not_started_again_has_occupied_its_segments(b8_nights):
    """A Kubernetes job preempted and not (yet) started again, or ended, has occupied its GPUs in its segments (start
    to preempt), priced like any occupied time (R4, R12); it is not running.
    - kp-1, 8 GPUs, 00:10-01:10, preempted: 8 GPU-hours, 28,540.82 x 8 / 11,520 = 19.8200 -> 19.82 (before: 0.00,
      its time in no month, left idle in the capacity reconciliation).
    - kp-2, 1 GPU, 02:00-03:00, preempted, running again since 04:00 and seen running at 07:00 (kp-3's submit, the
      stream's newest event): 1 + 3 = 4 GPU-hours, 28,540.82 x 4 / 11,520 = 9.9100 -> 9.91.
    November's capacity cost is still allocated to the cent, its training hours counting kp-1's 8 and kp-2's 4
    (NIGHT_1_CAPACITY)."""
    warehouse, _ = b8_nights
    assert query(
        warehouse,
        "select job_id, state, is_running, occupied_gpu_hours, compute_cost, has_unpriced_month from marts.fct_runs "
        "where job_id like 'kp-%' order by job_id",
    ) == [
        ("kp-1", "PREEMPTED", False, Decimal(8), Decimal("19.82"), False),
        ("kp-2", "RUNNING", True, Decimal(4), Decimal("9.91"), False),
        ("kp-3", "PENDING", False, Decimal(0), Decimal("0.00"), False),
    ]
    assert _capacity(warehouse) == NIGHT_1_CAPACITY


def test_a_kubernetes_job_preempted_across_a_month_boundary_is_split_by_its_segments(b8_nights):
    """kq-1, 1 GPU, 22:00-23:00 on 31 October, preempted, 00:00-01:00 on 2 November: 3,600 GPU-seconds in each month
    (before: 533 and 6,667, spread over its 27-hour span), 29,376.98 / 11,904 = 2.4678 -> 2.47 and 28,540.82 /
    11,520 = 2.4775 -> 2.48: 4.95. Each month's capacity cost is still allocated to the cent: October's training
    hours kq-1's 1, November's counting its other 1 (NIGHT_1_CAPACITY)."""
    warehouse, _ = b8_nights
    assert query(
        warehouse,
        "select month_start, occupied_gpu_seconds, compute_cost from intermediate.int_job_months_costed "
        "where job_id = 'kq-1' order by month_start",
    ) == [(date(2026, 10, 1), 3600, Decimal("2.47")), (date(2026, 11, 1), 3600, Decimal("2.48"))]
    assert query(
        warehouse, "select state, occupied_gpu_hours, compute_cost from marts.fct_runs where job_id = 'kq-1'"
    ) == [("COMPLETED", Decimal(2), Decimal("4.95"))]
    assert _capacity(warehouse) == NIGHT_1_CAPACITY


def _kp_samples(warehouse: Path) -> tuple[list[tuple], list[tuple]]:
    """kp-1's and kp-2's samples by how they are attributed, and their tiers and unobserved time."""
    attributed = query(
        warehouse,
        "select job_id, attribution, count(*) from intermediate.int_device_samples_attributed "
        "where job_id in ('kp-1', 'kp-2') group by job_id, attribution order by job_id, attribution",
    )
    tiers = query(
        warehouse,
        "select job_id, samples, effective_compute_gpu_hours, idle_gpu_hours, unobserved_gpu_hours "
        "from marts.fct_runs where job_id in ('kp-1', 'kp-2') order by job_id",
    )
    return attributed, tiers


def test_a_running_or_preempted_kubernetes_jobs_samples_are_its_own_night_by_night(b8_nights):
    """R5: a Kubernetes job's samples inside its segments (start to preempt, the last up to occupied_until_at) are
    its own: kp-1 (8 GPUs, 00:10-01:10, preempted, not started again) until its preemption, kp-2 (1 GPU, 02:00-03:00,
    preempted, running again since 04:00) until its stream's newest event; a sample in the gap between two segments
    is nobody's, whatever it names, and a sample stands for no time past its segment's end. kx (1 GPU, 03:00-03:10)
    holds kp-2's GPU in the gap. Pods on node-k, a sample a minute: kp-1's GPU 0 00:10-00:19 effective; on GPU 1
    kp-2's 02:50-02:59 effective, kx's 03:00-03:09 effective, kp-2's label again 03:20-03:29 effective (in the gap:
    a label the exporter was late to drop), kp-2's 05:00-05:09 idle and 08:00-08:09 effective.
    Night 1 (newest event kp-3's submit at 07:00): kp-1 10 samples x 60 s = 0.1667 GPU-hours effective (the last up
    to the nominal 60 s), 8 - 0.1667 = 7.8333 unobserved; kp-2 its 02:50 samples 600 s effective (02:59 up to the
    preemption at 03:00, not 120 s to 03:01 over kx's time) and its 05:00 samples 600 s idle: 0.1667 each, 4 -
    0.3333 = 3.6667 unobserved; its gap samples and its 08:00 samples (after it was seen running) nobody's. GPU 1's
    jobs add up to its time 02:50-03:10: 600 + 600 s. Night 2 adds only events (no new telemetry): kp-3's start at
    09:00, so kp-2 was seen running until 09:00 (5 + 1 = 6 GPU-hours), its window grows and its tiers are built
    again: its 08:00 samples 600 s effective, 05:09 now stands for 2 x 60 = 120 s (capped: its next is at 08:00), so
    effective 1,200 s = 0.3333, idle 540 + 120 = 660 s = 0.1833, 6 - 1,860 / 3,600 = 5.4833 unobserved. And kp-1's
    preemption at 00:15 and start at 00:50, exported late: its start and its end (01:10) are the same, its segments
    not, so its tiers are built again: 00:10-00:14 are its own, 300 s = 0.0833 effective, 00:15-00:19 nobody's; 8 x
    (5 + 20) minutes = 3.3333 GPU-hours occupied, 3.25 unobserved. (Before: the gap samples were
    kp-2's, 540 + 120 s of time it did not occupy, and 02:59 stood for 120 s, to 03:01 over kx's: 1,320 s of kp-2's
    before 03:30 beside kx's 600; kp-2 0.3667 effective and 3.4667 unobserved on night 1.)"""
    night_1, night_2 = b8_nights
    assert _kp_samples(night_1) == (
        [("kp-1", "job_label", 10), ("kp-2", "job_label", 20), ("kp-2", "label_names_no_running_job", 20)],
        [
            ("kp-1", 10, Decimal("0.1667"), Decimal(0), Decimal("7.8333")),
            ("kp-2", 20, Decimal("0.1667"), Decimal("0.1667"), Decimal("3.6667")),
        ],
    )
    # The GPU-seconds GPU 1's jobs' samples from 02:50 to 03:30 stand for: kp-2 02:50-03:00, kx 03:00-03:10.
    assert query(
        night_1,
        "select job_key, sum(represented_gpu_seconds) from intermediate.int_device_samples_tiered "
        "where hostname = 'node-k' and gpu_index = 1 and sampled_at < '2026-11-26 03:30' group by job_key "
        "order by job_key",
    ) == [("/kp-2@2026-11-26 01:30:00", 600.0), ("/kx@2026-11-26 03:00:00", 600.0)]
    assert query(
        night_2, "select job_id, occupied_gpu_hours from marts.fct_runs where job_id like 'kp-%' order by job_id"
    ) == [("kp-1", Decimal("3.3333")), ("kp-2", Decimal(6)), ("kp-3", Decimal(0))]
    assert _kp_samples(night_2) == (
        [
            ("kp-1", "job_label", 5),
            ("kp-1", "label_names_no_running_job", 5),
            ("kp-2", "job_label", 30),
            ("kp-2", "label_names_no_running_job", 10),
        ],
        [
            ("kp-1", 5, Decimal("0.0833"), Decimal(0), Decimal("3.2500")),
            ("kp-2", 30, Decimal("0.3333"), Decimal("0.1833"), Decimal("5.4833")),
        ],
    )


def test_a_job_event_after_the_night_is_quarantined():
    """An event stream records what has happened: a start stamped 2056 would make the job run until then (its
    stream's newest event is when a running job was last seen). A few minutes of clock skew are allowed."""
    schema = scheduler_events(load_contract())
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    parsed = ParsedFile(path=Path("k8s.jsonl"), sha256="")
    sources()["scheduler_events"].loader.parser(schema, None)(
        [
            _event("kf-1", "submit", "2026-11-26T00:00:00"),
            _event("kf-1", "start", "2056-11-26T00:10:00Z"),
            _event("kf-2", "submit", f"{now + timedelta(minutes=5):%Y-%m-%dT%H:%M:%S}Z"),  # within the skew
            _event("kf-3", "submit", f"{now + timedelta(hours=1):%Y-%m-%dT%H:%M:%S}Z"),
        ],
        parsed,
    )
    valid = validate_rows(parsed, schema)
    assert list(valid["job_id"]) == ["kf-1", "kf-2"]
    assert [(r.line, r.rule) for r in parsed.rejections] == [(2, "at.after_night"), (4, "at.after_night")]


def test_kubernetes_jobs_are_namespaced_allocated_their_request_and_complete(small_landing_night: Path):
    """- An event stating `gpus_requested` and no `gpus_allocated` was allocated its request (Kubernetes hands a pod
      exactly the GPUs it asks for): k-req, 8 GPUs 04:00-08:00, occupied 32 GPU-hours (before: 0, its time unpriced).
    - Job names are namespace-scoped: team-a/eval (B-1, 4 GPUs 01:00-03:00, 8 GPU-hours) and team-b/eval (B-2, 2
      GPUs 01:30-02:30, 2 GPU-hours) are two jobs (before: one job of 4 GPUs 01:00-03:00 in one batch, 8 GPU-hours).
    - The Job condition `Complete` is COMPLETED (before: quarantined, and team-b/eval seen running).
    - A run never started has no restarts (before: -1).
    - A job preempted and started again with fewer GPUs holds fewer in its later segment: k-shrink, 8 GPUs 14:00-24:00
      on 31 October, preempted, 1 GPU 12:00-22:00 on 1 November, occupied 80 + 10 = 90 GPU-hours, 80 in October and
      10 in November (before: 8 GPUs x 20 h = 160, split 80 and 80 by the segments' seconds)."""
    warehouse = small_landing_night
    assert query(
        warehouse,
        "select job_id, batch_id, state, restarts, gpus_allocated, occupied_gpu_hours from marts.fct_runs "
        "where job_id in ('eval', 'k-req', 'k-wait', 'k-shrink') order by job_id, batch_id",
    ) == [
        ("eval", "B-1", "COMPLETED", 0, 4, Decimal(8)),
        ("eval", "B-2", "COMPLETED", 0, 2, Decimal(2)),
        ("k-req", "B-1", "COMPLETED", 0, 8, Decimal(32)),
        ("k-shrink", "B-1", "COMPLETED", 1, 8, Decimal(90)),
        ("k-wait", "B-1", "PENDING", 0, 0, Decimal(0)),
    ]
    assert query(
        warehouse,
        "select month_start, occupied_gpu_seconds from intermediate.int_job_months_split where job_id = 'k-shrink' "
        "order by month_start",
    ) == [(date(2026, 10, 1), 80 * 3600), (date(2026, 11, 1), 10 * 3600)]
