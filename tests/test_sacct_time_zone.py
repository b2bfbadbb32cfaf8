"""sacct prints times in the zone of the machine that runs it: the demo's export as a cluster on Asia/Shanghai
prints it (every time eight hours ahead), loaded with the source's ``time_zone`` set to that zone, gives the marts of
the clean demo. Read as UTC, its jobs would sit eight hours after the device samples that measured them (B-7's
effective GPU-hours 0, its cost per effective GPU-hour null, with exit 0)."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

from cost_pipeline.cli import run_pipeline
from cost_pipeline.fingerprint import PUBLISHED_AT, table_fingerprints
from tests.helpers import query

TIMES = ("Submit", "Eligible", "Start", "End")
SHANGHAI = {"ops": {"raw__scheduler_jobs": {"config": {"time_zone": "Asia/Shanghai"}}}}


def _as_printed_in_shanghai(sacct: Path) -> None:
    """Every time of the export eight hours ahead, as sacct on a machine with TZ=Asia/Shanghai prints it; a time
    that is not one (Unknown, the demo's corrupted Start) as it was."""
    header, *rows = sacct.read_text(encoding="utf-8").splitlines()
    names = header.split("|")
    shifted = [header]
    for row in rows:
        values = row.split("|")
        for name in TIMES:
            index = names.index(name)
            try:
                values[index] = (datetime.fromisoformat(values[index]) + timedelta(hours=8)).isoformat()
            except ValueError:
                continue
        shifted.append("|".join(values))
    sacct.write_text("\n".join(shifted) + "\n", encoding="utf-8")


def test_a_shanghai_export_read_in_its_time_zone_gives_the_clean_demos_marts(demo_run, tmp_path):
    landing = tmp_path / "landing"
    shutil.copytree(demo_run.landing, landing)
    sacct = landing / "scheduler" / "sacct_2026-11.txt"
    _as_printed_in_shanghai(sacct)
    assert sacct.read_text(encoding="utf-8") != (demo_run.landing / "scheduler" / "sacct_2026-11.txt").read_text(
        encoding="utf-8"
    )
    warehouse = tmp_path / "warehouse.duckdb"

    assert run_pipeline(landing, warehouse, run_config=SHANGHAI)

    jobs = "select job_id, submit_at, start_at, end_at from raw.scheduler_jobs order by all"
    assert query(warehouse, jobs) == demo_run.query(jobs)
    quarantined = "select source_file, line, rule from raw.quarantine order by all"
    assert query(warehouse, quarantined) == demo_run.query(quarantined)
    # Every mart the same; the cost history's inputs_hash is of the files' bytes, which are other bytes here.
    ignore = (PUBLISHED_AT, "inputs_hash")
    clean = table_fingerprints(demo_run.warehouse, ignore=ignore)
    assert len(clean) >= 13 and table_fingerprints(warehouse, ignore=ignore) == clean
