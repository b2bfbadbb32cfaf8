"""One inference request as the pandas path maps it: native, or a LiteLLM spend-log row mapped row by row.

A LiteLLM row is recognised by its ``startTime`` (and no ``requested_at``): ``startTime`` becomes the request time
and ``endTime - startTime`` its latency. Its model is its ``model_group`` (the public model name the caller asked
for, the name of the proxy's ``model_list`` entry: the served model the service book prices), else its ``model``
(the deployment the proxy called, ``hosted_vllm/assistant-large``; the only name a row carries that no model group
routed, or from a proxy older than the column). Tokens, team and status are renamed; ``task_id``, ``attempt``,
``business_line``, ``escalated_to`` and ``human_handoff`` come from its ``metadata`` object.

A blank text (``""``, or only spaces, tabs and line breaks: what Go gateways and many JSON serialisers write for an
unset field) is absent, in every text field of either shape: an optional one is null (a blank ``task_id`` is no
task, a blank ``tenant`` is unassigned, a blank ``latency_tier`` is derived from the latency), and a blank
``request_id``, ``model`` or ``status`` is quarantined as a missing one is (``<column>.not_nullable``; a LiteLLM
row's model when both ``model_group`` and ``model`` are blank).

The request log loads inside DuckDB (``request_lines.py``), which maps each line in SQL alike; the lines SQL does
not vouch for are mapped here.
"""

from __future__ import annotations

import json
import re
from datetime import datetime

from cost_pipeline.ingest.lib.records import ParsedFile, jsonl_line_parser
from cost_pipeline.ingest.lib.source import LineParser
from cost_pipeline.ingest.lib.timestamps import utc_naive

_REQUEST_FIELDS = (
    "request_id",
    "requested_at",
    "model",
    "tenant",
    "business_line",
    "input_tokens",
    "output_tokens",
    "cache_hit",
    "latency_ms",
    "latency_tier",
    "status",
    "task_id",
    "attempt",
    "escalated_to",
    "human_handoff",
)
_LITELLM_FIELDS = (
    "startTime",
    "endTime",
    "prompt_tokens",
    "completion_tokens",
    "team_id",
    "end_user",
    "metadata",
    "model_group",
)
READ_FIELDS = (*_REQUEST_FIELDS, *_LITELLM_FIELDS)  # the fields a line is read by
LITELLM_STATUS = {"success": "completed", "failure": "failed"}
_TEXT_FIELDS = ("request_id", "model", "tenant", "business_line", "latency_tier", "status", "task_id", "escalated_to")
# A blank text, as a regular expression Python's re and DuckDB's RE2 read alike (request_lines.py checks it in SQL).
BLANK_TEXT = r"[ \t\n\f\r]*"


def given(value: object) -> object:
    """A field's value, None when it is a blank text (absent, as null is)."""
    return None if isinstance(value, str) and re.fullmatch(BLANK_TEXT, value) else value


def _flag(value: object) -> object:
    """LiteLLM writes cache_hit as "True"/"False"/"" text; booleans pass through."""
    if isinstance(value, str):
        return {"true": True, "false": False, "": False, "none": False}.get(value.strip().lower(), value)
    return False if value is None else value


def request_row(row: dict[str, object]) -> dict[str, object]:
    """One request in the native shape, or a LiteLLM spend-log row mapped into it."""
    if row.get("requested_at") is not None or row.get("startTime") is None:
        mapped = {name: given(row.get(name)) if name in _TEXT_FIELDS else row.get(name) for name in _REQUEST_FIELDS}
        mapped["requested_at"] = utc_naive(mapped["requested_at"])
        mapped["cache_hit"] = _flag(mapped["cache_hit"])
        mapped["human_handoff"] = _flag(mapped["human_handoff"])
        mapped["request_shape"] = "native"
        return mapped
    metadata = row.get("metadata")
    for _ in range(2):  # a JSON object, its text, or (through Parquet's JSON type) that text quoted again
        if isinstance(metadata, str):
            try:
                metadata = json.loads(metadata)
            except json.JSONDecodeError:
                metadata = None
    metadata = metadata if isinstance(metadata, dict) else {}
    started, ended = utc_naive(row.get("startTime")), utc_naive(row.get("endTime"))
    latency = (
        int((ended - started).total_seconds() * 1000)
        if isinstance(started, datetime) and isinstance(ended, datetime)
        else None
    )
    status = given(row.get("status")) or given(metadata.get("status")) or "success"
    model_group = given(row.get("model_group"))  # LiteLLM writes "" where no model group routed the call
    return {
        "request_id": given(row.get("request_id")),
        "requested_at": started,
        "model": given(row.get("model")) if model_group is None else model_group,
        "tenant": given(row.get("team_id")),
        "business_line": given(metadata.get("business_line")),
        "input_tokens": row.get("prompt_tokens"),
        "output_tokens": row.get("completion_tokens"),
        "cache_hit": _flag(row.get("cache_hit")),
        "latency_ms": latency,
        "latency_tier": None,
        "status": LITELLM_STATUS.get(str(status).lower(), str(status).lower()),
        "task_id": given(metadata.get("task_id")),
        "attempt": metadata.get("attempt", 1),
        "escalated_to": given(metadata.get("escalated_to")),
        "human_handoff": _flag(metadata.get("human_handoff")),
        "request_shape": "litellm",
        "source_line": row.get("source_line"),
    }


def request_line_parser() -> LineParser:
    """Requests as JSON Lines, native or LiteLLM spend-log shaped, row by row."""
    read_json = jsonl_line_parser(READ_FIELDS)

    def parse(lines: list[str], parsed: ParsedFile) -> None:
        read_json(lines, parsed)
        parsed.rows[:] = [dict(request_row(row), source_line=row["source_line"]) for row in parsed.rows]

    return parse
