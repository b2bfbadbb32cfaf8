"""Kubernetes-style job events go through the same marts as sacct: occupation per start-to-stop segment,
restarts, lineage and repeated same-cause failures."""

from __future__ import annotations

import json
from decimal import Decimal

import duckdb

from cost_pipeline.cli import run_pipeline


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


def test_kubernetes_jobs_reach_the_marts(tmp_path):
    landing = tmp_path / "landing"
    (landing / "registry").mkdir(parents=True)
    (landing / "registry" / "batches.csv").write_text(
        "batch_id,project,goal,team,data_version,model_version,code_version,config_version,contract_version\n"
        "B-1,p,g,t,d,m,c,cfg,v1\n",
        encoding="utf-8",
    )
    (landing / "scheduler").mkdir()
    retry = {"reason": "failure_retry", "restart_of": "k1"}
    (landing / "scheduler" / "events.jsonl").write_text(
        "\n".join(
            [
                _event("k1", "submit", "2026-11-02T00:00:00"),
                _event("k1", "start", "2026-11-02T01:00:00"),
                _event("k1", "preempt", "2026-11-02T02:00:00"),
                _event("k1", "requeue", "2026-11-02T02:30:00"),
                _event("k1", "start", "2026-11-02T03:00:00"),
                _event("k1", "end", "2026-11-02T04:00:00", state="OOMKilled"),
                _event("k2", "start", "2026-11-02T05:00:00", labels=retry),
                _event("k2", "end", "2026-11-02T06:00:00", state="OOMKilled", labels=retry),
                _event("k3", "start", "2026-11-02T07:00:00"),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    warehouse = tmp_path / "warehouse.duckdb"
    assert run_pipeline(landing, warehouse)

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
