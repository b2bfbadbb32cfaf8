"""kill -9 at 20 random points of a night (during ingest and during dbt), then re-run: every time the warehouse
reaches the clean run's tables, and no file ledger entry is ever left without its rows."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb

from cost_pipeline.cli import run_pipeline
from cost_pipeline.fingerprint import table_fingerprints

SCHEMAS = ("raw", "marts", "history")
KILLS = 20


def _fingerprints(warehouse: Path) -> dict[str, dict[str, str]]:
    return {schema: table_fingerprints(warehouse, schema) for schema in SCHEMAS}


def _ledger_matches_rows(warehouse: Path) -> None:
    con = duckdb.connect(str(warehouse))
    try:
        tables = {t for (t,) in con.execute(
            "select table_name from information_schema.tables where table_schema = 'raw'").fetchall()}
        if "ingested_files" not in tables:
            return
        for source, staged, quarantined in con.execute(
                "select source, sum(rows_staged), sum(rows_quarantined) from raw.ingested_files group by source"
        ).fetchall():
            assert source in tables, source
            assert con.execute(f'select count(*) from raw."{source}"').fetchone()[0] == staged, source
            assert con.execute("select count(*) from raw.quarantine where source = ?",
                               [source]).fetchone()[0] == quarantined, source
    finally:
        con.close()


def _default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _killed_run(landing: Path, warehouse: Path, after_seconds: float) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "cost_pipeline.cli", "run", "--landing", str(landing), "--warehouse", str(warehouse)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        preexec_fn=_default_signals,
    )
    deadline = time.monotonic() + after_seconds
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)        # the run and its dbt child, like kill -9 of the night
    process.wait(timeout=30)


def test_kill_nine_then_rerun_reaches_the_clean_tables(demo_run, tmp_path):
    clean = _fingerprints(demo_run.warehouse)
    rng = random.Random(9)
    points = sorted(rng.uniform(1.0, 16.0) for _ in range(KILLS))
    recovered = 0
    for number, after_seconds in enumerate(points):
        warehouse = tmp_path / f"night_{number}.duckdb"
        if number % 2:                                # half the nights start from last night's finished warehouse
            shutil.copyfile(demo_run.warehouse, warehouse)
        _killed_run(demo_run.landing, warehouse, after_seconds)
        if warehouse.exists():
            _ledger_matches_rows(warehouse)
        assert run_pipeline(demo_run.landing, warehouse), f"re-run after a kill at {after_seconds:.1f} s"
        assert _fingerprints(warehouse) == clean, f"kill at {after_seconds:.1f} s"
        recovered += 1
        for leftover in tmp_path.glob(f"night_{number}.*"):
            leftover.unlink()
    assert recovered == KILLS
