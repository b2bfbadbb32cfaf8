"""One inference request as the pandas path maps it: native, or a LiteLLM spend-log row mapped row by row.

A LiteLLM row is recognised by its ``startTime`` (and no ``requested_at``): ``startTime`` becomes the request time
and ``endTime - startTime`` its latency; tokens, team and status are renamed; ``task_id``, ``attempt``,
``business_line``, ``escalated_to`` and ``human_handoff`` come from its ``metadata`` object.

The request log loads inside DuckDB (``request_lines.py``), which maps each line in SQL alike; the lines SQL does
not vouch for are mapped here.
"""

from __future__ import annotations

import json
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
_LITELLM_FIELDS = ("startTime", "endTime", "prompt_tokens", "completion_tokens", "team_id", "end_user", "metadata")
READ_FIELDS = (*_REQUEST_FIELDS, *_LITELLM_FIELDS)  # the fields a line is read by
LITELLM_STATUS = {"success": "completed", "failure": "failed"}


def _flag(value: object) -> object:
    """LiteLLM writes cache_hit as "True"/"False"/"" text; booleans pass through."""
    if isinstance(value, str):
        return {"true": True, "false": False, "": False, "none": False}.get(value.strip().lower(), value)
    return False if value is None else value


def request_row(row: dict[str, object]) -> dict[str, object]:
    """One request in the native shape, or a LiteLLM spend-log row mapped into it."""
    if row.get("requested_at") is not None or row.get("startTime") is None:
        mapped = {name: row.get(name) for name in _REQUEST_FIELDS}
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
    status = row.get("status") or metadata.get("status") or "success"
    return {
        "request_id": row.get("request_id"),
        "requested_at": started,
        "model": row.get("model"),
        "tenant": row.get("team_id"),
        "business_line": metadata.get("business_line"),
        "input_tokens": row.get("prompt_tokens"),
        "output_tokens": row.get("completion_tokens"),
        "cache_hit": _flag(row.get("cache_hit")),
        "latency_ms": latency,
        "latency_tier": None,
        "status": LITELLM_STATUS.get(str(status).lower(), str(status).lower()),
        "task_id": metadata.get("task_id"),
        "attempt": metadata.get("attempt", 1),
        "escalated_to": metadata.get("escalated_to"),
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
