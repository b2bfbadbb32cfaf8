"""Training steps (I3): one JSON object per step, as the training loop logs it, read by the shared JSONL reader."""

from __future__ import annotations

from cost_pipeline.contract import schemas
from cost_pipeline.ingest.lib.source import RowLoader, Source, jsonl_columns

SOURCES = (
    Source(
        "training_steps",
        ("I3",),
        "steps",
        ("*.jsonl",),
        "Training-step records",
        RowLoader(schemas.training_steps, jsonl_columns),
        rows_stand_alone=True,
    ),
)
