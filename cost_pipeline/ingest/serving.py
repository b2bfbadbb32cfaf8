"""Serving (I9): inference requests (native, or LiteLLM spend-log rows mapped row by row), replica allocations,
monthly serving costs besides GPUs, and task outcomes.

Requests load inside DuckDB (``request_lines.py``); how a LiteLLM row maps into the native shape is in
``request_rows.py``.
"""

from __future__ import annotations

from cost_pipeline.contract import schemas
from cost_pipeline.ingest.lib.source import RowLoader, Source, csv_columns
from cost_pipeline.ingest.request_lines import RequestLoader

SOURCES = (
    Source(
        "serving_requests",
        ("I9",),
        "requests",
        ("*.jsonl", "*.parquet"),
        "Inference requests, native or LiteLLM spend-log shape",
        RequestLoader(schemas.serving_requests),
        rows_stand_alone=True,
    ),
    Source(
        "serving_replicas",
        ("I9",),
        "serving",
        ("replicas*.csv",),
        "Serving replica allocations",
        RowLoader(schemas.serving_replicas, csv_columns),
        # A run quarantined (a blank ended_at: still up) held GPUs for hours no figure knows: the months it names
        # leave their shared serving costs unknown, not shifted onto the other models (int_replica_months_quarantined).
        extent=("replica_id", "started_at", "ended_at"),
    ),
    Source(
        "serving_monthly_costs",
        ("I9",),
        "serving",
        ("monthly_costs*.csv",),
        "Monthly serving costs besides GPUs",
        RowLoader(schemas.serving_monthly_costs, csv_columns),
    ),
    Source(
        "task_outcomes",
        ("I9",),
        "tasks",
        ("outcomes*.csv",),
        "Task outcomes and human correction time",
        RowLoader(schemas.task_outcomes, csv_columns),
    ),
)
