"""A source whose load fails does not cost the night: its load is rolled back, raw keeps its rows of the last good
night, the asset still materialises with a warning naming the source, the file, the error and that night, every mart
is rebuilt and published, and the CLI's summary says which figures are stale (exit 8).

Night 1 is the session's demo night (its warehouse and Dagster home copied). Night 2 adds a Parquet requests file
that passes the per-file gate (it opens, DuckDB reads its footer and rows) but whose INTERVAL column of 100,000,000
years cannot be converted to Python: reading it raises OverflowError, which no rule foresees."""

from __future__ import annotations

import contextlib
import io
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from cost_pipeline.cli import STALE_EXIT, main
from cost_pipeline.dagster_home import dagster_home, warehouse_instance
from cost_pipeline.fingerprint import table_fingerprints
from tests.helpers import query

# Its module-scoped fixture runs once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("stale_source")

SOURCE = "serving_requests"
BAD_FILE = "requests/requests_2026-12.parquet"
REQUESTS = dg.AssetKey(["raw", SOURCE])


@dataclass(frozen=True)
class StaleNight:
    night1: Path
    warehouse: Path
    code: int
    out: str
    err: str
    last_good: datetime  # night 1's load of the requests, naive UTC


def _requests(warehouse: Path) -> list[tuple]:
    return query(warehouse, f"select * from raw.{SOURCE} order by source_file, source_line")


@pytest.fixture(scope="module")
def stale_night(demo_run, tmp_path_factory: pytest.TempPathFactory) -> StaleNight:
    assert demo_run.succeeded
    root = tmp_path_factory.mktemp("stale")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    shutil.copy2(demo_run.warehouse, warehouse)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        shutil.copytree(dagster_home(demo_run.warehouse), dagster_home(warehouse))
        with warehouse_instance(warehouse) as instance:
            event = instance.get_latest_materialization_event(REQUESTS)
        last_good = datetime.fromtimestamp(event.timestamp, UTC).replace(tzinfo=None)
        bad = (landing / BAD_FILE).as_posix()
        duckdb.sql(f"copy (select 'r9' as request_id, interval 100000000 year as queued) to '{bad}' (format parquet)")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["run", "--landing", str(landing), "--warehouse", str(warehouse)])
    return StaleNight(demo_run.warehouse, warehouse, code, out.getvalue(), err.getvalue(), last_good)


def test_a_source_whose_load_fails_keeps_its_rows_and_every_mart_is_rebuilt(stale_night):
    assert stale_night.code == STALE_EXIT, stale_night.err
    assert _requests(stale_night.warehouse) == _requests(stale_night.night1)
    assert query(
        stale_night.warehouse, "select count(*) from raw.ingested_files where source_file = ?", [BAD_FILE]
    ) == [(0,)]
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        with warehouse_instance(stale_night.warehouse) as instance:
            run = instance.get_runs(limit=1)[0]
            materialized = {
                e.dagster_event.asset_key.to_user_string()
                for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
            }
            checks = [
                e.dagster_event.event_specific_data
                for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
            ]
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert {"raw/serving_requests", "marts/fct_service_month", "marts/fct_batch_costs", "published/marts"} <= (
        materialized
    )
    # The same landing files loaded but the bad one: every mart is as night 1 built it.
    assert table_fingerprints(stale_night.warehouse, "marts") == table_fingerprints(stale_night.night1, "marts")
    (loaded,) = [c for c in checks if c.asset_key == dg.AssetKey(["raw", SOURCE]) and c.check_name == "source_loaded"]
    assert not loaded.passed and loaded.severity == dg.AssetCheckSeverity.WARN
    assert loaded.metadata["last_good_load"].value == stale_night.last_good.isoformat(sep=" ")
    assert f"figures from {SOURCE} are as of {stale_night.last_good:%Y-%m-%d %H:%M} UTC" in loaded.description
    assert f"{BAD_FILE}: OverflowError" in loaded.description
    others = [c for c in checks if c.check_name == "source_loaded" and c.asset_key != REQUESTS]
    assert others and all(c.passed for c in others)
    # its freshness check is evaluated in the failed load's step all the same
    assert [c.check_name for c in checks if c.asset_key == REQUESTS].count("delivered_on_time") == 1


def test_the_summary_says_which_figures_are_stale(stale_night):
    ((source, error, last_good),) = query(
        stale_night.warehouse, "select source, error, last_good_load from raw.source_failures"
    )
    assert (source, last_good) == (SOURCE, stale_night.last_good)
    assert error.startswith(f"{BAD_FILE}: OverflowError") and "\n" not in error
    night = f"{stale_night.last_good:%Y-%m-%d %H:%M} UTC"
    assert f"  stale: figures from {SOURCE} are as of {night}; tonight's load failed: {BAD_FILE}" in stale_night.out
    assert "Full cost per batch (marts.fct_batch_costs)" in stale_night.out  # the tables are printed
    # ... after a line that says which of their rows are from an earlier night
    notice = f"stale: the tables below hold {SOURCE}'s rows as of {night}: tonight's load failed"
    assert 0 <= stale_night.out.find(notice) < stale_night.out.find("Compute bill per batch")
    assert f"figures from {SOURCE} are stale" in stale_night.err.strip().splitlines()[-1]
