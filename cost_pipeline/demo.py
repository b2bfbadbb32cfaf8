"""The built-in demo scenario, written as the real exports it stands for.

Serving (a month of requests, replicas, tasks and their outcomes) is described at ``serving_tasks``.

Two model versions trained by RL over six days of November 2026 on a small owned cluster (two 8-GPU
servers): exploration jobs, a node failure and its restart, a configuration error, discarded steps,
validation (with one evaluation rework) and analysis jobs, plus the messes real exports carry (sacct step
rows, an array job, a pending array, a running job, a CPU-only job without a phase label, a job without a
batch, one corrupt line). Every figure is simple enough to compute by hand; tests/test_end_to_end.py does.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import quote_plus

import pandas as pd

from cost_pipeline import duckdb_session
from cost_pipeline.contract.schemas import DEVICE_SAMPLE_BASE_COLUMNS
from cost_pipeline.ingest.lib.warehouse import file_pattern
from cost_pipeline.ingest.scheduler import SACCT_FIELDS

SETUP_MINUTES = 10  # idle before the first step in every job
COMM_EVERY = 10  # every 10th minute after setup waits on NVLink
SAMPLE_SECONDS = 60


@dataclass(frozen=True)
class DemoJob:
    job_id: str
    name: str
    labels: str
    gpus: int
    start: datetime | None
    end: datetime | None
    time_limit: str
    state: str = "COMPLETED"
    job_id_raw: str | None = None
    hosts: tuple[str, ...] = ("gpu-a",)
    steps: bool = False
    hang_from_minute: dict[str, int] = field(default_factory=dict)  # host -> minute the GPUs went idle
    sample_gap: tuple[str, int, int] | None = None  # (host, gpu, first missing minute)


def _t(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute)


JOBS: tuple[DemoJob, ...] = (
    DemoJob(
        "1001",
        "b7-explore-lr",
        "batch=B-7;phase=exploration;reason=planned_experiment",
        8,
        _t(2, 8),
        _t(2, 10),
        "04:00:00",
    ),
    DemoJob(
        "1002",
        "b7-train",
        "batch=B-7;phase=training;reason=planned_experiment",
        16,
        _t(3, 0),
        _t(3, 4),
        "1-00:00:00",
        state="NODE_FAIL",
        hosts=("gpu-a", "gpu-b"),
        steps=True,
        hang_from_minute={"gpu-b": 180},
    ),
    DemoJob(
        "1003",
        "b7-train-retry",
        "batch=B-7;phase=training;reason=failure_retry;restart_of=1002",
        16,
        _t(3, 6),
        _t(3, 12),
        "1-00:00:00",
        hosts=("gpu-a", "gpu-b"),
        steps=True,
        sample_gap=("gpu-b", 7, 300),
    ),
    DemoJob(
        "1004", "b7-validate", "batch=B-7;phase=validation;reason=planned_experiment", 8, _t(4, 0), _t(4, 1), "02:00:00"
    ),
    DemoJob(
        "1005",
        "b7-analyse",
        "batch=B-7;phase=analysis;reason=planned_experiment",
        8,
        _t(4, 2),
        _t(4, 2, 30),
        "01:00:00",
    ),
    DemoJob(
        "2001",
        "b8-explore-cfg",
        "batch=B-8;phase=exploration;reason=param_tuning;end_reason=config_error",
        8,
        _t(5, 0),
        _t(5, 1),
        "02:00:00",
        state="FAILED",
    ),
    DemoJob(
        "2002_1",
        "b8-sweep",
        "batch=B-8;phase=exploration;reason=param_tuning",
        8,
        _t(5, 2),
        _t(5, 3),
        "02:00:00",
        job_id_raw="2010",
    ),
    DemoJob(
        "2002_2",
        "b8-sweep",
        "batch=B-8;phase=exploration;reason=param_tuning",
        8,
        _t(5, 2),
        _t(5, 3),
        "02:00:00",
        job_id_raw="2011",
        hosts=("gpu-b",),
    ),
    DemoJob(
        "2002_[3-4]",
        "b8-sweep",
        "batch=B-8;phase=exploration;reason=param_tuning",
        8,
        None,
        None,
        "02:00:00",
        state="PENDING",
        job_id_raw="2002",
    ),
    DemoJob(
        "2003",
        "b8-train",
        "batch=B-8;phase=training;reason=planned_experiment",
        16,
        _t(6, 0),
        _t(6, 8),
        "2-00:00:00",
        hosts=("gpu-a", "gpu-b"),
        steps=True,
    ),
    DemoJob(
        "2004", "b8-validate", "batch=B-8;phase=validation;reason=planned_experiment", 8, _t(7, 0), _t(7, 1), "02:00:00"
    ),
    DemoJob(
        "2005",
        "b8-validate-rework",
        "batch=B-8;phase=validation;reason=eval_rework;continues=2004",
        8,
        _t(7, 2),
        _t(7, 3),
        "02:00:00",
    ),
    DemoJob(
        "2006",
        "b8-analyse",
        "batch=B-8;phase=analysis;reason=planned_experiment",
        8,
        _t(7, 4),
        _t(7, 4, 30),
        "01:00:00",
        state="CANCELLED by 10304007",
    ),
    DemoJob("2007", "b8-report", "batch=B-8;reason=planned_experiment", 0, _t(7, 5), _t(7, 6), "01:00:00"),
    DemoJob("3001", "notebook", "phase=exploration", 8, _t(2, 12), _t(2, 13), "01:00:00"),
    DemoJob(
        "3002",
        "b9-warmup",
        "batch=B-9;phase=exploration;reason=planned_experiment",
        8,
        _t(7, 10),
        None,
        "UNLIMITED",
        state="RUNNING",
    ),
)

BATCHES = [
    {
        "batch_id": "B-7",
        "project": "assistant-rl",
        "goal": "RL fine-tune of the v1 policy on preference data",
        "team": "post-training",
        "data_version": "prefs-2026-10",
        "model_version": "policy-v1",
        "code_version": "a1b2c3d",
        "config_version": "rl-cfg-12",
        "budget_cost": "8000.00",
        "budget_gpu_hours": "250.00",
        "max_trial_rounds": "3",
        "stop_condition": "stop after two rounds whose cost rose without new evidence",
        "variance_boundary_pct": "10.00",
        "contract_version": "v1",
    },
    {
        "batch_id": "B-8",
        "project": "assistant-rl",
        "goal": "RL fine-tune of the v2 policy with the new reward",
        "team": "post-training",
        "data_version": "prefs-2026-11",
        "model_version": "policy-v2",
        "code_version": "d4e5f6a",
        "config_version": "rl-cfg-14",
        "budget_cost": "400.00",
        "budget_gpu_hours": "120.00",
        "max_trial_rounds": "2",
        "stop_condition": "stop after two rounds whose cost rose without new evidence",
        "variance_boundary_pct": "5.00",
        "contract_version": "v1",
    },
    {
        "batch_id": "B-10",
        "project": "assistant-rl",
        "goal": "Evaluation burst of the v2 policy on rented cloud GPUs",
        "team": "post-training",
        "data_version": "prefs-2026-11",
        "model_version": "policy-v2",
        "code_version": "d4e5f6a",
        "config_version": "rl-cfg-14",
        "budget_cost": "100.00",
        "budget_gpu_hours": "32.00",
        "max_trial_rounds": "1",
        "stop_condition": "one evaluation burst",
        "variance_boundary_pct": "10.00",
        "contract_version": "v1",
    },
]
# Budgets (R18), written before contract_version, which stays the registry file's last column. B-7's full cost
# (7,786.11) is 2.67 % under its 8,000.00 budget, inside its 10 % boundary; B-8's budget is below even its compute
# cost, so it passes its 5 % boundary; B-10's 108.00 is 8 % over its 100.00, inside 10 %.

# Harvest detailed time report, November 2026 (I7): (date, project code, task, hours, first, last, roles, cost rate).
# B-7: three people on training engineering, one on business evaluation (a group of fewer than three), one entry
# without a Cost Rate (assumed), rework hours; Ben Okafor's rate 173.37 is a canary that must never leave finance.
# B-8: similar, smaller. One entry's Project Code is not a batch: it is unattributed.
CANARY_RATE = "173.37"
TIMESHEET_ENTRIES = [
    ("2026-11-02", "B-7", "Data preparation", "6", "Alice", "Chen", "ML Engineer", "120.00"),
    ("2026-11-03", "B-7", "Training runs", "8", "Alice", "Chen", "ML Engineer", "120.00"),
    ("2026-11-03", "B-7", "Rerun after failure", "4", "Alice", "Chen", "ML Engineer", "120.00"),
    ("2026-11-03", "B-7", "Training runs", "6", "Ben", "Okafor", "ML Engineer", CANARY_RATE),
    ("2026-11-04", "B-7", "Rerun after failure", "1.5", "Ben", "Okafor", "ML Engineer", CANARY_RATE),
    ("2026-11-03", "B-7", "Training runs", "5", "Chloe", "Martin", "ML Engineer, Contractor", ""),
    ("2026-11-04", "B-7", "Business evaluation", "3", "Dmitri", "Ivanov", "Product", "90.00"),
    ("2026-11-06", "B-8", "Training runs", "4", "Alice", "Chen", "ML Engineer", "120.00"),
    ("2026-11-06", "B-8", "Cluster support", "2", "Eva", "Lind", "Platform", ""),
    ("2026-11-07", "B-8", "Evaluation rework", "2", "Dmitri", "Ivanov", "Product", "90.00"),
    ("2026-11-07", "B-8", "Coordination", "1", "Farah", "Haddad", "Programme", "80.00"),
    ("2026-11-09", "PLATFORM", "Coordination", "2", "Farah", "Haddad", "Programme", "80.00"),
]
HARVEST_HEADER = [
    "Date",
    "Client",
    "Project",
    "Project Code",
    "Task",
    "Notes",
    "Hours",
    "Hours Rounded",
    "Billable?",
    "Invoiced?",
    "Approved?",
    "First Name",
    "Last Name",
    "Roles",
    "Employee?",
    "Billable Rate",
    "Billable Amount",
    "Cost Rate",
    "Cost Amount",
    "Currency",
    "External Reference URL",
]

# Vendor invoices (I8): B-7 an initial delivery (billed) and an ongoing-support accrual not yet invoiced (pending);
# B-8 one billed invoice.
SERVICE_INVOICES = [
    ["LC-2026-311", "Labelcraft", "B-7", "initial_delivery", "2400.00", "USD", "2026-11-10", ""],
    ["LC-ACCR-2026-11", "Labelcraft", "B-7", "ongoing_support", "600.00", "USD", "", "2026-11"],
    ["EW-0042", "EvalWorks", "B-8", "initial_delivery", "1500.00", "USD", "2026-11-20", ""],
]

# Trial rounds (R18): B-7's two rounds each produced evidence; B-8's cost rose round after round while only its
# first round produced any (round 1 = job 2001, round 2 = the sweep, round 3 = training and validation).
BATCH_ROUNDS = [
    ["B-7", 1, "2026-11-02T00:00:00", "2026-11-03T00:00:00", "learning rate 3e-6 beats 1e-5 on the reward proxy"],
    ["B-7", 2, "2026-11-03T00:00:00", "2026-11-05T00:00:00", "policy-v1 RL candidate passes the acceptance bar"],
    ["B-8", 1, "2026-11-05T00:00:00", "2026-11-05T01:30:00", "config with the new reward head fails at load"],
    ["B-8", 2, "2026-11-05T01:30:00", "2026-11-06T00:00:00", ""],
    ["B-8", 3, "2026-11-06T00:00:00", "2026-11-08T00:00:00", ""],
]


def _elapsed(job: DemoJob) -> str:
    if job.start is None or job.end is None:
        return "00:00:00"
    seconds = int((job.end - job.start).total_seconds())
    days, rest = divmod(seconds, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def _sacct_rows(jobs: tuple[DemoJob, ...] = JOBS) -> list[list[str]]:
    rows = []
    for job in jobs:
        tres = (
            f"billing=64,cpu=64,gres/gpu={job.gpus},mem=512G,node={len(job.hosts)}"
            if job.gpus
            else ("billing=8,cpu=8,mem=32G,node=1")
        )
        values = {
            "JobID": job.job_id,
            "JobIDRaw": job.job_id_raw or job.job_id,
            "JobName": job.name,
            "Account": "post-training",
            "Partition": "gpu",
            "User": "trainer",
            "WCKey": "*",
            "State": job.state,
            "ExitCode": "0:0" if job.state == "COMPLETED" else "1:0",
            "DerivedExitCode": "0:0",
            "Reason": "None",
            "FailedNode": "gpu-b" if job.state == "NODE_FAIL" else "",
            "Restarts": "0",
            "Submit": (job.start - timedelta(minutes=5) if job.start else _t(5, 1)).isoformat(),
            "Eligible": (job.start - timedelta(minutes=5) if job.start else _t(5, 1)).isoformat(),
            "Start": job.start.isoformat() if job.start else "Unknown",
            "End": job.end.isoformat() if job.end else "Unknown",
            "Elapsed": _elapsed(job),
            "Timelimit": job.time_limit,
            "NNodes": str(len(job.hosts)),
            "NodeList": ",".join(job.hosts) if job.start else "None assigned",
            "ReqTRES": tres,
            "AllocTRES": tres if job.start else "",
            "Comment": job.labels,
            "AdminComment": "",
        }
        rows.append([values[f] for f in SACCT_FIELDS])
        if job.steps:
            for step in ("batch", "extern", "0"):
                step_values = dict(
                    values,
                    JobID=f"{job.job_id}.{step}",
                    JobIDRaw=f"{job.job_id}.{step}",
                    JobName=step if step != "0" else "python",
                    Comment="",
                    Timelimit="",
                )
                rows.append([step_values[f] for f in SACCT_FIELDS])
    return rows


def _tier_values(job: DemoJob, host: str, minute: int) -> tuple[float, float, float, float]:
    """(graphics-engine activity, SM activity, tensor activity, NVLink bytes/s each way) for one GPU-minute."""
    if minute < SETUP_MINUTES or minute >= job.hang_from_minute.get(host, 10**9):
        return 0.02, 0.01, 0.0, 1.0e6  # idle
    if minute % COMM_EVERY == COMM_EVERY - 1:
        return 0.30, 0.20, 0.01, 1.0e9  # comm wait: tx + rx = 2 GB/s, tensor idle
    return 0.85, 0.80, 0.60, 1.5e8  # effective compute


def _sample_rows(job: DemoJob) -> list[list[object]]:
    if job.start is None or job.end is None or job.gpus == 0:
        return []
    minutes = int((job.end - job.start).total_seconds() // 60)
    gpus_per_host = job.gpus // len(job.hosts)
    rows = []
    for minute in range(minutes):
        at = job.start + timedelta(seconds=minute * SAMPLE_SECONDS)
        for host in job.hosts:
            for gpu in range(gpus_per_host):
                if job.sample_gap and (host, gpu) == job.sample_gap[:2] and minute >= job.sample_gap[2]:
                    continue
                gr, sm, tensor, nvlink = _tier_values(job, host, minute)
                rows.append(
                    [
                        at.isoformat(),
                        host,
                        gpu,
                        job.job_id_raw or job.job_id,
                        gr,
                        sm,
                        tensor,
                        nvlink,
                        nvlink,
                        650.0 if gr > 0.5 else 120.0,
                    ]
                )
    return rows


# Step durations in seconds: 600 (B-7) or 480 (B-8) unless listed here.
STEP_SECONDS = {("1002", 13): 720, ("1003", 17): 900, ("2003", 20): 1500}
DISCARDED = {
    ("1002", 11): "rollback",
    ("1002", 12): "rollback",
    ("2003", 5): "data_quality",
    ("2003", 6): "data_quality",
    ("2003", 7): "data_quality",
    ("2003", 21): "reward_change",
}
UNCOMMITTED = {("1002", 13)}
STEP_RANGES = {
    "1002": ("B-7", range(1, 14), 600),
    "1003": ("B-7", range(11, 31), 600),
    "2003": ("B-8", range(1, 31), 480),
}
TOKENS_PER_STEP = 1_000_000


def _step_records() -> list[dict[str, object]]:
    by_id = {j.job_id: j for j in JOBS}
    records = []
    for job_id, (batch_id, steps, base_seconds) in STEP_RANGES.items():
        at = by_id[job_id].start + timedelta(minutes=SETUP_MINUTES)
        for step in steps:
            seconds = STEP_SECONDS.get((job_id, step), base_seconds)
            end = at + timedelta(seconds=seconds)
            batch = next(b for b in BATCHES if b["batch_id"] == batch_id)
            records.append(
                {
                    "batch_id": batch_id,
                    "job_id": job_id,
                    "step": step,
                    "started_at": at.isoformat(),
                    "ended_at": end.isoformat(),
                    "committed": (job_id, step) not in UNCOMMITTED,
                    "discarded_reason": DISCARDED.get((job_id, step)),
                    "samples": 512,
                    "tokens": TOKENS_PER_STEP,
                    "config_version": batch["config_version"],
                    "data_version": batch["data_version"],
                }
            )
            at = end
    return records


# Serving, November 2026: a large model on 8 GPUs at an agreed 4.00 per GPU-hour and a small one on 2 owned GPUs
# at the internal price (blank), plus the month's other serving costs.
SERVING_REPLICAS = [
    ["R-L1", "assistant-large", 8, "2026-11-01T00:00:00", "2026-12-01T00:00:00", "4.00"],
    ["R-S1", "assistant-small", 2, "2026-11-01T00:00:00", "2026-12-01T00:00:00", ""],
]
SERVING_MONTHLY = [
    ["2026-11", "cpu_memory", "1200.00"],
    ["2026-11", "network_storage", "800.00"],
    ["2026-11", "facility_power", "1500.00"],
    ["2026-11", "operations", "2000.00"],
]
TENANTS = (("acme", "support"), ("globex", "legal"), ("initech", "support"))
INPUT_TOKENS = (300, 1200, 4000, 10000)
OUTPUT_TOKENS = (100, 300, 900, 2500)
HUMAN_MINUTES, HUMAN_RATE = 6, "60.00"


def _latency_tier(latency_ms: int) -> str:
    return "interactive" if latency_ms < 2000 else "standard" if latency_ms < 10000 else "batch"


def serving_tasks() -> list[tuple[str, str, list[tuple[str, str, str | None, bool]], bool, str]]:
    """(task id, category, attempts as (model, status, escalated_to, human_handoff), succeeded, judged_by).

    Tasks routed to the small model first: 50% right at once, 20% right on a retry, 10% escalated to the
    large model, 10% handed to a person, 10% failed after an error and a timeout. Tasks routed to the large
    model: 90% right at once, 10% failed.
    """
    small, large = "assistant-small", "assistant-large"
    tasks = []
    for i in range(600):
        task_id, category = f"T{i + 1:04d}", ("faq", "summarise")[i % 2]
        kind = i % 10
        if i < 400:
            attempts, succeeded, judge = {
                **dict.fromkeys(range(5), ([(small, "completed", None, False)], True, "evaluator")),
                **dict.fromkeys(
                    (5, 6), ([(small, "completed", None, False), (small, "completed", None, False)], True, "evaluator")
                ),
                7: ([(small, "completed", large, False), (large, "completed", None, False)], True, "evaluator"),
                8: ([(small, "completed", None, True)], True, "human"),
                9: ([(small, "failed", None, False), (small, "timeout", None, False)], False, "evaluator"),
            }[kind]
        else:
            attempts, succeeded, judge = (
                ([(large, "completed", None, False)], True, "evaluator")
                if kind < 9
                else ([(large, "completed", None, False)], False, "evaluator")
            )
        tasks.append((task_id, category, attempts, succeeded, judge))
    return tasks


def _write_serving(landing: Path) -> None:
    _write_csv(
        landing / "serving" / "replicas.csv",
        ["replica_id", "model", "gpus", "started_at", "ended_at", "gpu_hour_price"],
        SERVING_REPLICAS,
    )
    _write_csv(landing / "serving" / "monthly_costs.csv", ["month", "item", "amount"], SERVING_MONTHLY)
    requests, outcomes = [], []
    for number, (task_id, category, attempts, succeeded, judge) in enumerate(serving_tasks()):
        tenant, business_line = TENANTS[number % 3]
        for attempt, (model, status, escalated_to, handoff) in enumerate(attempts, start=1):
            output = OUTPUT_TOKENS[(number // 4) % 4] if status == "completed" else 0
            latency = 400 + 4 * output
            requests.append(
                {
                    "request_id": f"{task_id}-{attempt}",
                    "requested_at": (datetime(2026, 11, 1) + timedelta(minutes=number * 70 + attempt)).isoformat(),
                    "model": model,
                    "tenant": tenant,
                    "business_line": business_line,
                    "input_tokens": INPUT_TOKENS[number % 4],
                    "output_tokens": output,
                    "cache_hit": number % 3 == 0,
                    "latency_ms": latency,
                    "latency_tier": _latency_tier(latency),
                    "status": status,
                    "task_id": task_id,
                    "attempt": attempt,
                    "escalated_to": escalated_to,
                    "human_handoff": handoff,
                }
            )
        human = judge == "human"
        outcomes.append(
            [
                task_id,
                category,
                str(succeeded).lower(),
                judge,
                HUMAN_MINUTES if human else "",
                HUMAN_RATE if human else "",
            ]
        )
    path = landing / "requests" / "requests_2026-11.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    _write_csv(
        landing / "tasks" / "outcomes.csv",
        ["task_id", "task_category", "succeeded", "judged_by", "human_minutes", "human_cost_per_hour"],
        outcomes,
    )


# Cloud, November 2026: batch B-10 rents 8 GPUs for 4 hours through a Kubernetes cluster in the cloud. The job
# comes from the cluster's event stream; the provider's FOCUS 1.2 export bills it by ResourceId (no batch tag),
# restates part of it (ChargeClass = Correction), bills a B-10-tagged volume, a support plan no batch owns and a
# line tagged with a batch nobody registered.
CLOUD_JOB = "b10-eval-cloud"
CLOUD_CLUSTER = "eks-us-east-1"  # rented: the contract's owned_vs_cloud.cloud_clusters lists it
CLOUD_JOB_ARN = f"arn:aws:eks:us-east-1:123456789012:job/{CLOUD_JOB}"
FOCUS_COLUMNS = [
    "BillingAccountId",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "PricingCategory",
    "ListCost",
    "ContractedCost",
    "BilledCost",
    "EffectiveCost",
    "BillingCurrency",
    "InvoiceId",
    "ResourceId",
    "ResourceName",
    "ServiceCategory",
    "ServiceName",
    "SkuId",
    "ConsumedQuantity",
    "ConsumedUnit",
    "Tags",
    "InvoiceIssuerName",
    "ProviderName",
    "PublisherName",
    "x_CostCenter",
]
# (charge class, description, list, billed = effective, resource id, service category, service, quantity, unit, tags)
FOCUS_LINES = [
    ("", "8 x H100 for 4 h", "171.37", "102.40", CLOUD_JOB_ARN, "Compute", "Amazon EKS", "32", "GPU-Hours", {}),
    (
        "Correction",
        "Restated: 2 GPU-hours billed twice",
        "-10.71",
        "-6.40",
        CLOUD_JOB_ARN,
        "Compute",
        "Amazon EKS",
        "-2",
        "GPU-Hours",
        {},
    ),
    (
        "",
        "Checkpoint volume",
        "12.00",
        "12.00",
        "vol-0b10ckpt",
        "Storage",
        "Amazon EBS",
        "120",
        "GB-Mo",
        {"batch_id": "B-10"},
    ),
    ("", "Support plan", "29.00", "29.00", "", "Management and Governance", "AWS Support", "", "", {}),
    ("", "Notebook instance", "5.00", "5.00", "i-0nb99", "Compute", "Amazon EC2", "2", "Hours", {"batch_id": "B-99"}),
]


def _write_cloud(landing: Path) -> None:
    events = [
        {"job_id": CLOUD_JOB, "event": "submit", "at": "2026-11-10T00:00:00Z"},
        {"job_id": CLOUD_JOB, "event": "start", "at": "2026-11-10T00:10:00Z"},
        {"job_id": CLOUD_JOB, "event": "end", "at": "2026-11-10T04:10:00Z", "state": "Succeeded"},
    ]
    labels = {"batch": "B-10", "phase": "validation", "reason": "planned_experiment"}
    path = landing / "scheduler" / "cloud_events_2026-11.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps(
                dict(e, cluster=CLOUD_CLUSTER, gpus_requested=8, gpus_allocated=8, time_limit_s=21600, labels=labels)
            )
            + "\n"
            for e in events
        ),
        encoding="utf-8",
    )
    rows = []
    for charge_class, description, list_cost, cost, resource, category, service, quantity, unit, tags in FOCUS_LINES:
        rows.append(
            [
                "123456789012",
                "2026-11-01T00:00:00Z",
                "2026-12-01T00:00:00Z",
                "2026-11-10T00:00:00Z",
                "2026-11-11T00:00:00Z",
                "Usage",
                charge_class,
                description,
                "Usage-Based",
                "Standard",
                list_cost,
                list_cost,
                cost,
                cost,
                "USD",
                "INV-2026-11-0042",
                resource,
                resource,
                category,
                service,
                f"SKU-{service.replace(' ', '')}",
                quantity,
                unit,
                json.dumps(tags) if tags else "",
                "AWS",
                "AWS",
                "AWS",
                "ml-platform",
            ]
        )
    _write_csv(landing / "billing" / "aws_focus_2026-11.csv", FOCUS_COLUMNS, rows)


GIB = 1 << 30
STORAGE_INVENTORY_AT = "1795996800000"  # manifest creationTimestamp: 2026-11-30T00:00:00Z in milliseconds
STORAGE_PRICES = [["STANDARD", "0.023"], ["STANDARD_IA", "0.0125"], ["GLACIER", "0.004"]]
# bucket, prefix, purpose, owner, batch_id, retention_days (blank: the purpose's contract default)
STORAGE_PREFIX_RULES = [
    ["ml-prod", "raw/b7/", "raw", "data-team", "B-7", ""],
    ["ml-prod", "checkpoints/b7/", "checkpoint", "training-team", "B-7", ""],
    ["ml-prod", "eval/b7/", "eval_result", "eval-team", "B-7", ""],
    ["ml-prod", "backup/b7/", "backup", "platform-team", "B-7", ""],
    ["ml-prod", "logs/b7/", "log", "platform-team", "B-7", "30"],
    ["ml-prod", "raw/b8/", "raw", "data-team", "B-8", ""],
    ["ml-prod", "checkpoints/b8/", "checkpoint", "training-team", "B-8", ""],
    ["ml-prod", "models/", "release_artifact", "platform-team", "", ""],
    ["ml-prod", "models/b8/candidates/", "candidate_model", "training-team", "B-8", ""],
    ["ml-archive", "raw/b8/", "backup", "platform-team", "B-8", ""],
]
# The main inventory (ml-prod, taken 2026-11-30T00:00Z): key, GiB, LastModifiedDate, ETag, StorageClass.
# Objects written before November are held 29/30 of the month; the rest from their write to the 30th.
STORAGE_OBJECTS = [
    ("raw/b7/part-0000.parquet", 3000, "2026-10-15T08:00:00.000Z", "a7f0c3e1b2d4e5f60718293a4b5c6d7e", "STANDARD"),
    ("checkpoints/b7/step 1000.ckpt", 600, "2026-11-10T00:00:00.000Z", "0c1d2e3f405162738495a6b7c8d9e0f1", "STANDARD"),
    ("checkpoints/b7/step-2000.ckpt", 600, "2026-11-16T00:00:00.000Z", "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "STANDARD"),
    ("backup/b7/step-2000.ckpt", 600, "2026-11-20T00:00:00.000Z", "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "GLACIER"),
    ("eval/b7/results.jsonl", 120, "2026-11-25T00:00:00.000Z", "3c4d5e6f708192a3b4c5d6e7f8091a2b", "STANDARD_IA"),
    ("logs/b7/train.log", 300, "2026-09-30T00:00:00.000Z", "5e6f708192a3b4c5d6e7f8091a2b3c4d", "STANDARD"),
    ("raw/b8/shard-000.parquet", 1500, "2026-10-20T00:00:00.000Z", "7a8b9c0d1e2f30415263748596a7b8c9", "STANDARD"),
    ("checkpoints/b8/step-500.ckpt", 600, "2026-11-20T00:00:00.000Z", "b8c9d0e1f2031425364758697a8b9c0d", "STANDARD"),
    (
        "models/b8/candidates/cand-1.safetensors",
        150,
        "2026-11-24T00:00:00.000Z",
        "c9d0e1f20314253647586970a8b9c0d1",
        "STANDARD",
    ),
    ("scratch/tmp-dump.bin", 600, "2026-11-01T00:00:00.000Z", "d0e1f203142536475869707a8b9c0d1e", "STANDARD"),
]
# An earlier inventory of ml-prod in the same month (header CSV, date in the name): the object it lists is not in
# the 30th's (deleted since), so it is charged until the 23rd and is no finding.
STORAGE_EARLIER = [
    ("scratch/old-dump.bin", 900, "2026-11-02T00:00:00.000Z", "e1f20314253647586970a8b9c0d1e2f3", "STANDARD")
]
# A second bucket as Parquet with AWS's own column names: a copy of B-8's raw shard (same ETag, a duplicate) and
# an object in a storage class without a price and without a rule.
STORAGE_ARCHIVE = [
    ("raw/b8/shard-000.parquet", 1500, "2026-11-15T00:00:00+00:00", "7a8b9c0d1e2f30415263748596a7b8c9", "GLACIER"),
    ("tmp/unpriced.bin", 10, "2026-11-01T00:00:00+00:00", "f2031425364758697a8b9c0d1e2f3041", "INTELLIGENT_TIERING"),
]


def _write_storage(landing: Path) -> None:
    """S3 Inventory files as AWS writes them (I6), the prefix rules and the storage prices."""
    folder = landing / "storage"
    _write_csv(folder / "storage_prices.csv", ["storage_class", "price_per_gb_month"], STORAGE_PRICES)
    _write_csv(
        folder / "prefix_rules.csv",
        ["bucket", "prefix", "purpose", "owner", "batch_id", "retention_days"],
        STORAGE_PREFIX_RULES,
    )

    data_name = "3c2e8a4f-1b7d-4e0a-9f61-2d5c7b8e9a10.csv.gz"
    inventory = folder / "ml-prod" / "2026-11-30T00-00Z"
    inventory.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    writer = csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for key, gib, modified, etag, storage_class in STORAGE_OBJECTS:
        writer.writerow(["ml-prod", quote_plus(key, safe="/"), gib * GIB, modified, etag, storage_class, "true"])
    (inventory / data_name).write_bytes(gzip.compress(text.getvalue().encode("utf-8"), mtime=0))
    manifest = {
        "sourceBucket": "ml-prod",
        "destinationBucket": "arn:aws:s3:::ml-inventory",
        "version": "2016-11-30",
        "creationTimestamp": STORAGE_INVENTORY_AT,
        "fileFormat": "CSV",
        "fileSchema": "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass, IsLatest",
        "files": [{"key": f"ml-prod/daily/data/{data_name}", "size": 0, "MD5checksum": "0" * 32}],
    }
    (inventory / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")

    _write_csv(
        folder / "ml-prod_inventory_2026-11-23.csv",
        ["Bucket", "Key", "Size", "LastModifiedDate", "ETag", "StorageClass"],
        [
            ["ml-prod", key, gib * GIB, modified, etag, storage_class]
            for key, gib, modified, etag, storage_class in STORAGE_EARLIER
        ],
    )

    archive = pd.DataFrame(
        {
            "bucket": ["ml-archive"] * len(STORAGE_ARCHIVE),
            "key": [row[0] for row in STORAGE_ARCHIVE],
            "size": [row[1] * GIB for row in STORAGE_ARCHIVE],
            "last_modified_date": [pd.Timestamp(row[2]) for row in STORAGE_ARCHIVE],
            "e_tag": [row[3] for row in STORAGE_ARCHIVE],
            "storage_class": [row[4] for row in STORAGE_ARCHIVE],
            "is_latest": [True] * len(STORAGE_ARCHIVE),
        }
    )
    con = duckdb_session.connect()
    con.from_df(archive).write_parquet(str(folder / "ml-archive_inventory_2026-11-30.parquet"))
    con.close()


def _write_timesheets(landing: Path) -> None:
    """The month's Harvest export with every column Harvest writes (Cost Amount blank where the rate is)."""
    rows = []
    for date, code, task, hours, first, last, roles, rate in TIMESHEET_ENTRIES:
        amount = f"{Decimal(hours) * Decimal(rate):.2f}" if rate else ""
        rows.append(
            [
                date,
                "Internal",
                "assistant-rl",
                code,
                task,
                "",
                hours,
                hours,
                "No",
                "No",
                "Yes",
                first,
                last,
                roles,
                "Yes",
                "0.0",
                "0.0",
                rate,
                amount,
                "United States Dollar - USD",
                "",
            ]
        )
    _write_csv(landing / "timesheets" / "harvest_time_report_2026-11.csv", HARVEST_HEADER, rows)


def _write_services_and_rounds(landing: Path) -> None:
    _write_csv(
        landing / "services" / "invoices_2026-11.csv",
        ["invoice_id", "vendor", "batch_id", "stage", "amount", "currency", "invoiced_on", "service_month"],
        SERVICE_INVOICES,
    )
    _write_csv(
        landing / "registry" / "rounds.csv", ["batch_id", "round", "started_at", "ended_at", "evidence"], BATCH_ROUNDS
    )


def _write_csv(path: Path, header: list[str], rows: list[list[object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def write_demo_landing(landing: Path) -> Path:
    """Write the scenario's landing folder; returns it."""
    _write_csv(landing / "registry" / "batches.csv", list(BATCHES[0]), [list(b.values()) for b in BATCHES])

    sacct = landing / "scheduler" / "sacct_2026-11.txt"
    sacct.parent.mkdir(parents=True, exist_ok=True)
    lines = ["|".join(SACCT_FIELDS)] + ["|".join(r) for r in _sacct_rows()]
    # A line the collector corrupted (impossible Start): quarantined with file, line and rule, never lost.
    bad = _sacct_rows()[0]
    bad[0], bad[1], bad[15] = "1999", "1999", "2026-13-45T99:00:00"
    lines.append("|".join(bad))
    sacct.write_text("\n".join(lines) + "\n", encoding="utf-8")

    header = [name for name, _ in DEVICE_SAMPLE_BASE_COLUMNS]  # no energy counter: energy is power x time
    b7 = [row for job in JOBS if not job.job_id.startswith(("2", "3")) for row in _sample_rows(job)]
    rest = [row for job in JOBS if job.job_id.startswith(("2", "3")) for row in _sample_rows(job)]
    _write_csv(landing / "telemetry" / "dcgm_b7.csv", header, b7)
    staging_csv = landing / "telemetry" / "dcgm_rest.csv.tmp"
    _write_csv(staging_csv, header, rest)
    columns = "{" + ", ".join(f"'{name}': '{sql_type}'" for name, sql_type in DEVICE_SAMPLE_BASE_COLUMNS) + "}"
    con = duckdb_session.connect()
    relation = con.sql(
        f"select * from read_csv(?, header = true, columns = {columns})", params=[file_pattern(staging_csv)]
    )
    relation.write_parquet(str(landing / "telemetry" / "dcgm_rest.parquet"))
    con.close()
    staging_csv.unlink()

    steps = landing / "steps" / "steps.jsonl"
    steps.parent.mkdir(parents=True, exist_ok=True)
    steps.write_text("".join(json.dumps(r) + "\n" for r in _step_records()), encoding="utf-8")

    _write_csv(
        landing / "ledger" / "purchases.csv",
        [
            "purchase_id",
            "purchased_on",
            "asset_class",
            "description",
            "quantity",
            "unit_price",
            "currency",
            "gpus_per_unit",
            "depreciation_years",
            "salvage_value",
        ],
        [["P-001", "2026-01-01", "gpu_server", "8x H100 SXM server", 2, "457798.00", "USD", 8, 3, "0.00"]],
    )
    _write_csv(
        landing / "ledger" / "facility.csv",
        ["month", "item", "amount", "currency"],
        [
            [m, item, amount, "USD"]
            for m in ("2026-10", "2026-11")
            for item, amount in (("rent", "2016.00"), ("power", "1152.00"), ("network", "288.00"))
        ],
    )
    _write_serving(landing)
    _write_cloud(landing)
    _write_storage(landing)
    _write_timesheets(landing)
    _write_services_and_rounds(landing)
    return landing
