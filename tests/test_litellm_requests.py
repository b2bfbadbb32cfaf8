"""A LiteLLM spend-log export (SpendLogs rows as the proxy writes them) loads unedited into the serving marts."""

from __future__ import annotations

import json
from decimal import Decimal

import duckdb

from cost_pipeline.cli import run_pipeline

# Rows shaped like LiteLLM's SpendLogs table, including columns this pipeline does not use. The first two were
# routed through the proxy's model_list entry "llama-3-70b" (model_group) to a vLLM deployment (model, as LiteLLM
# writes it: provider/model); the third is a row of a proxy older than the model_group column.
KEY_HASH = "88dc28d0f030c55ed4ab77ed8faf098196cb1c05df778539800c9f1243fe6b4b"
MODEL_ID = "3b4e0a7f52c1d9e86a0f4c2b7d1e95a8c6f3b2d0e4a9c7f1b5d8e2a6c0f9b3d7"  # a config deployment's id: a hash
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
        "request_duration_ms": 1500,
        "model": "hosted_vllm/llama-3-70b",
        "model_id": MODEL_ID,
        "model_group": "llama-3-70b",
        "custom_llm_provider": "hosted_vllm",
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
        "model": "hosted_vllm/llama-3-70b",
        "model_id": MODEL_ID,
        "model_group": "llama-3-70b",
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


def test_a_litellm_request_is_of_its_model_group(tmp_path):
    """LiteLLM's ``model`` names the deployment the proxy called (``hosted_vllm/assistant-large``), which no replica
    list names; the model the caller asked for, the served model the service book prices, is ``model_group``. It was
    never read: such requests were unpriced. A blank or absent model group keeps ``model`` (LiteLLM writes ``""`` when
    no model group routed the call); a native row's ``model`` is its own. SQL maps the lines as ``request_row`` does."""
    from cost_pipeline.ingest.request_rows import request_row
    from tests.helpers import query
    from tests.test_value_sense import load, rules, write

    row = {k: LITELLM_ROWS[0][k] for k in ("startTime", "endTime", "prompt_tokens", "completion_tokens", "team_id")}
    native = {"requested_at": "2026-11-01T00:00:00Z", "input_tokens": 10, "output_tokens": 5, "cache_hit": False,
              "latency_ms": 2500, "status": "completed", "attempt": 1, "human_handoff": False}  # fmt: skip
    lines = [
        dict(row, request_id="l-1", model="hosted_vllm/assistant-large", model_group="assistant-large"),
        dict(row, request_id="l-2", model="azure/gpt-4o-eu", model_group=""),
        dict(row, request_id="l-3", model="assistant-small"),
        dict(row, request_id="l-4", model="", model_group="assistant-large"),
        dict(row, request_id="l-5", model="assistant-small", model_group=None),
        dict(row, request_id="l-6", model=" ", model_group=" \t"),
        dict(row, request_id="l-7", model="hosted_vllm/assistant-large", model_group=["assistant-large"]),
        dict(native, request_id="n-1", model="assistant-small", model_group="assistant-large"),
    ]
    write(tmp_path / "landing" / "requests" / "r.jsonl", "\n".join(json.dumps(r) for r in lines) + "\n")
    warehouse, quarantined = load(tmp_path, "serving_requests")
    staged = query(warehouse, "select request_id, model from raw.serving_requests order by request_id")
    assert staged == [
        ("l-1", "assistant-large"),
        ("l-2", "azure/gpt-4o-eu"),
        ("l-3", "assistant-small"),
        ("l-4", "assistant-large"),
        ("l-5", "assistant-small"),
        ("n-1", "assistant-small"),
    ]
    assert [(r["request_id"], r["model"]) for r in map(request_row, lines[:5] + lines[7:])] == staged
    assert rules(quarantined) == [(6, "model.not_nullable"), (7, "model.scalar")]
    assert {q[0] for q in quarantined} == {"requests/r.jsonl"}


def test_a_parquet_export_with_rows_sql_does_not_vouch_for_loads_them(tmp_path):
    """A Parquet file's rows SQL does not vouch for are checked by the pandas path: a row with a negative token count
    among good ones, or every row of a file with a column typed as SQL and Python read otherwise (a UUID: DuckDB and
    pyarrow type LiteLLM's model_id so). The connection held an unfinished result then and DuckDB refused to check
    them: each file was refused whole (``file_format``, "file is not readable"), its good requests lost."""
    from tests.helpers import query
    from tests.test_value_sense import load

    folder = tmp_path / "landing" / "requests"
    folder.mkdir(parents=True)
    rows = {
        "negative.parquet": [LITELLM_ROWS[0], dict(LITELLM_ROWS[0], request_id="neg", prompt_tokens=-5)],
        "uuid.parquet": [dict(r, model_id="5f1c2b8e-8a4d-4c1e-9a57-1f0e6d2c3b4a") for r in LITELLM_ROWS[1:]],
    }
    con = duckdb.connect()
    for name, file_rows in rows.items():
        jsonl = tmp_path / f"{name}.jsonl"
        jsonl.write_text("".join(json.dumps(r) + "\n" for r in file_rows), encoding="utf-8")
        con.sql("select * from read_json(?, format = 'newline_delimited')", params=[str(jsonl)]).write_parquet(
            str(folder / name)
        )
    assert con.sql(f"select typeof(model_id) from read_parquet('{folder / 'uuid.parquet'}')").fetchall()[0] == ("UUID",)
    con.close()
    warehouse, quarantined = load(tmp_path, "serving_requests")
    assert [(f, line, rule) for f, line, rule, _ in quarantined] == [
        ("requests/negative.parquet", 2, "input_tokens.non_negative")
    ]
    staged = query(warehouse, "select request_id, model from raw.serving_requests order by request_id")
    assert staged == [
        ("chatcmpl-9f1c", "llama-3-70b"),
        ("chatcmpl-9f1d", "llama-3-70b"),
        ("chatcmpl-9f1e", "llama-3-70b"),
    ]
