"""A warehouse held by another process for a moment is a transient error: the ingest step is retried and
then succeeds (Dagster RetryRequested)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb

from cost_pipeline.defs.ingest import source_assets
from cost_pipeline.defs.resources import LandingZone, Warehouse
from tests.helpers import REGISTRY_HEADER

HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("held", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def test_a_briefly_held_warehouse_is_retried_then_loads(tmp_path):
    landing = tmp_path / "landing"
    (landing / "registry").mkdir(parents=True)
    (landing / "registry" / "batches.csv").write_text(
        REGISTRY_HEADER + "B-1,p,g,t,d,m,c,cfg,v1,,,,,\n",
        encoding="utf-8",
    )
    warehouse = tmp_path / "w.duckdb"
    duckdb.connect(str(warehouse)).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(warehouse), "2.5"],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: (
            signal.signal(signal.SIGINT, signal.SIG_DFL),
            signal.signal(signal.SIGTERM, signal.SIG_DFL),
        ),
    )
    assert holder.stdout.readline().strip() == "held"
    registry = next(a for a in source_assets if a.key.path[-1] == "batch_registry")
    result = dg.materialize(
        [registry],
        instance=dg.DagsterInstance.ephemeral(),
        resources={"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))},
    )
    holder.wait(timeout=30)
    assert result.success
    retries = [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
    assert retries, "the first attempt should have met the held file and asked for a retry"
    con = duckdb.connect(str(warehouse), read_only=True)
    assert con.execute("select batch_id from raw.batch_registry").fetchall() == [("B-1",)]
    con.close()
    assert Path(warehouse).exists()
