"""Every DuckDB connection of the pipeline runs in UTC whatever the host's zone (issue 10): the warehouse connection
ingest opens (and a cursor of it), publishing's and the CLI's, the in-memory ones that read files, and dbt's.
Each test runs under the host zone Asia/Kolkata (+05:30), which DuckDB would otherwise take as its session zone."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from cost_pipeline import duckdb_session
from cost_pipeline.ingest.lib.warehouse import connect
from tests.helpers import dbt_show

ZONE = "select current_setting('TimeZone')"
# The day of an instant (20:00 UTC, 01:30 the next day at +05:30) follows the session zone.
MIDNIGHT = "select cast(timestamptz '2026-11-30 20:00:00+00' as date)"


pytestmark = pytest.mark.usefixtures("host_in_kolkata")


def _zone_and_day(con: duckdb.DuckDBPyConnection) -> tuple[str, str]:
    try:
        return con.execute(ZONE).fetchone()[0], str(con.execute(MIDNIGHT).fetchone()[0])
    finally:
        con.close()


def test_the_host_zone_would_show_without_the_setting():
    assert _zone_and_day(duckdb.connect()) == ("Asia/Kolkata", "2026-12-01")


def test_a_warehouse_connection_and_its_cursors_are_in_utc(tmp_path: Path):
    landing = tmp_path / "landing"
    landing.mkdir()
    con = connect(tmp_path / "w.duckdb", readable_dir=landing)  # locked down, as ingest opens it
    assert _zone_and_day(con.cursor()) == ("UTC", "2026-11-30")
    assert _zone_and_day(con) == ("UTC", "2026-11-30")
    read_only = duckdb_session.connect(str(tmp_path / "w.duckdb"), read_only=True)  # the CLI's reads
    assert _zone_and_day(read_only) == ("UTC", "2026-11-30")
    assert _zone_and_day(duckdb_session.connect()) == ("UTC", "2026-11-30")  # reading files, publishing


def test_dbt_runs_in_utc(tmp_path: Path):
    env = {**os.environ, "COST_WAREHOUSE": str(tmp_path / "warehouse.duckdb")}
    row = dbt_show(tmp_path, f"{ZONE} as zone", env)
    assert row == {"zone": "UTC"}
