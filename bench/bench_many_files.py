"""Benchmark: many small files. 10,000 one-record training-step files (a trainer that writes a file per step),
checked ingest against a bare typed DuckDB load of the same files.

Run on demand (not part of the test suite):

    .venv/bin/python bench/bench_many_files.py --rows 10000

Each file holds one JSON Lines record, as the demo's steps do. The pipeline's ingest hashes, opens, parses and
checks every file, and records each in the file ledger; the baseline reads the same files with one
``read_json`` over their glob into a typed table. Both are measured in the same run on the same machine
(``against_baseline.py``); the ratio is the cost per file of line tracking, the ledger and the contract's checks.
"""

from __future__ import annotations

import json
from pathlib import Path

from against_baseline import compare

from cost_pipeline.contract import load_contract
from cost_pipeline.ingest.registry import load_source, sources

BASELINE_SQL = """
create table steps as select * from read_json(?, format = 'newline_delimited', columns = {
    batch_id: 'VARCHAR', job_id: 'VARCHAR', step: 'BIGINT', started_at: 'TIMESTAMP', ended_at: 'TIMESTAMP',
    committed: 'BOOLEAN', discarded_reason: 'VARCHAR', samples: 'BIGINT', tokens: 'BIGINT',
    config_version: 'VARCHAR', data_version: 'VARCHAR'})
"""


def write_step_files(folder: Path, files: int) -> Path:
    """One record per file, ``step_000001.jsonl`` and on; returns the glob the baseline reads."""
    for step in range(1, files + 1):
        minute = step * 10
        record = {
            "batch_id": "B-7",
            "job_id": "1002",
            "step": step,
            "started_at": f"2026-11-03T{minute // 600 % 24:02d}:{minute // 10 % 60:02d}:00",
            "ended_at": f"2026-11-03T{minute // 600 % 24:02d}:{minute // 10 % 60:02d}:30",
            "committed": True,
            "discarded_reason": None,
            "samples": 512,
            "tokens": 1_000_000,
            "config_version": "rl-cfg-12",
            "data_version": "prefs-2026-10",
        }
        (folder / f"step_{step:06d}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    return folder / "*.jsonl"


if __name__ == "__main__":
    compare(
        "steps",
        write_step_files,
        BASELINE_SQL,
        lambda con, landing: load_source(con, landing, sources()["training_steps"], load_contract()),
    )
