"""A LiteLLM spend-log export (SpendLogs rows as the proxy writes them) loads unedited into the serving marts."""

from __future__ import annotations

import json
from decimal import Decimal

import duckdb

from cost_pipeline.cli import run_pipeline

# Rows shaped like LiteLLM's SpendLogs table, including columns this pipeline does not use.
KEY_HASH = "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"
LITELLM_ROWS = [
    {
        "request_id": "chatcmpl-9f1c",
        "call_type": "acompletion",
        "api_key": KEY_HASH,
        "spend": 0.00042,
        "total_tokens": 1330,
        "prompt_tokens": 1200,
        "completion_tokens": 130,
        "startTime": "2026-11-03T10:00:00.120000Z",
        "endTime": "2026-11-03T10:00:01.620000Z",
        "completionStartTime": "2026-11-03T10:00:00.410000Z",
        "model": "llama-3-70b",
        "model_id": "a1",
        "model_group": "llama-3-70b",
        "api_base": "http://127.0.0.1:8000/v1",
        "user": "",
        "metadata": {"user_api_key_team_alias": "support", "task_id": "ticket-1", "business_line": "support"},
        "cache_hit": "False",
        "cache_key": "Cache OFF",
        "request_tags": ["prod"],
        "team_id": "team-support",
        "end_user": "customer-17",
        "requester_ip_address": "",
        "status": "success",
    },
    {
        "request_id": "chatcmpl-9f1d",
        "call_type": "acompletion",
        "api_key": KEY_HASH,
        "spend": 0.0,
        "total_tokens": 1200,
        "prompt_tokens": 1200,
        "completion_tokens": 0,
        "startTime": "2026-11-03T10:01:00+00:00",
        "endTime": "2026-11-03T10:01:30+00:00",
        "model": "llama-3-70b",
        "metadata": '{"task_id": "ticket-1", "attempt": 2}',
        "cache_hit": "",
        "team_id": "team-support",
        "end_user": "customer-17",
        "status": "failure",
    },
    {
        "request_id": "chatcmpl-9f1e",
        "call_type": "acompletion",
        "api_key": "1f0e",
        "spend": 0.0001,
        "total_tokens": 300,
        "prompt_tokens": 250,
        "completion_tokens": 50,
        "startTime": "2026-11-03T11:00:00",
        "endTime": "2026-11-03T11:00:12.500000",
        "model": "llama-3-70b",
        "metadata": {},
        "cache_hit": "True",
        "team_id": None,
        "end_user": None,
    },
]


def _landing(tmp_path, requests_file: str):
    landing = tmp_path / "landing"
    (landing / "serving").mkdir(parents=True)
    (landing / "serving" / "replicas.csv").write_text(
        "replica_id,model,gpus,started_at,ended_at,gpu_hour_price\n"
        "R1,llama-3-70b,4,2026-11-01T00:00:00,2026-11-02T00:00:00,2.50\n",
        encoding="utf-8",
    )
    (landing / "requests").mkdir()
    jsonl = landing / "requests" / "litellm_spend_logs.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in LITELLM_ROWS), encoding="utf-8")
    if requests_file == "parquet":
        con = duckdb.connect()
        parquet = landing / "requests" / "litellm_spend_logs.parquet"
        con.sql("select * from read_json(?, format = 'newline_delimited')", params=[str(jsonl)]).write_parquet(
            str(parquet)
        )
        con.close()
        jsonl.unlink()
    return landing


def _check(tmp_path, requests_file: str) -> None:
    landing = _landing(tmp_path, requests_file)
    warehouse = tmp_path / "warehouse.duckdb"
    assert run_pipeline(landing, warehouse)
    con = duckdb.connect(str(warehouse), read_only=True)
    month = con.execute(
        "select serving_cost, requests_total, requests_completed, cost_per_request from marts.fct_service_month"
    ).fetchall()
    requests = {
        r[0]: r[1:]
        for r in con.execute(
            "select request_id, requested_at, tenant, latency_ms, latency_tier, status, cache_hit, attempt, task_id "
            "from intermediate.int_requests_costed"
        ).fetchall()
    }
    quarantined = con.execute("select count(*) from raw.quarantine").fetchone()[0]
    con.close()
    # 4 GPUs x 24 h x 2.50 = 240.00, over the 2 completed requests.
    assert month == [(Decimal("240.00"), 3, 2, Decimal("120.000000"))]
    assert quarantined == 0
    first = requests["chatcmpl-9f1c"]
    assert (str(first[0]), first[1], first[2], first[3], first[4], first[5], first[7]) == (
        "2026-11-03 10:00:00.120000",
        "team-support",
        1500,
        "interactive",
        "completed",
        False,
        "ticket-1",
    )
    assert requests["chatcmpl-9f1d"][4:8] == ("failed", False, 2, "ticket-1")
    assert requests["chatcmpl-9f1e"][1:5] == ("unassigned", 12500, "batch", "completed")


def test_litellm_jsonl_loads_unedited(tmp_path):
    _check(tmp_path, "jsonl")


def test_litellm_parquet_loads_unedited(tmp_path):
    _check(tmp_path, "parquet")
