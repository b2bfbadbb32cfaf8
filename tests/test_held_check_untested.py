"""The no_held_rows check when a raw asset is materialised alone (issue 10): its rows are loaded but no dbt test has
seen them, so none can be held yet. Its own module, outside the dbt_failures group: it needs none of that group's
nights, and runs beside them."""

from __future__ import annotations

import shutil

import dagster as dg
import pytest

from cost_pipeline.cli import run_pipeline
from cost_pipeline.dagster_home import warehouse_instance
from tests.test_dbt_failures import _held_checks


def test_a_raw_asset_materialised_alone_warns_that_its_rows_are_not_tested(demo_run, tmp_path):
    """A raw asset materialised alone (from the UI, or a sensor's job) loads rows no dbt test has seen: its
    no_held_rows check warns, naming the models that did not run since, until a night builds them."""
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    shutil.copy2(demo_run.warehouse, warehouse)
    # The demo night's persistent Dagster instance comes along: its history is the night's.
    shutil.copytree(demo_run.warehouse.with_name("warehouse.dagster"), tmp_path / "warehouse.dagster")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        assert run_pipeline(landing, warehouse, asset_keys=[["raw", "serving_requests"]])
        with warehouse_instance(warehouse) as instance:
            (run,) = instance.get_runs(limit=1)
            (check,) = [
                event.dagster_event.event_specific_data
                for event in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
                if event.dagster_event.event_specific_data.check_name == "no_held_rows"
            ]
        assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
        # The staging model and what the request models are built from (int_requests_inputs reads each log's span).
        models = ["staging/stg_serving__requests", "intermediate/int_requests_inputs"]
        untested = check.metadata["models_not_run_since_load"].value
        assert sorted(untested) == sorted(models)
        assert f"raw/serving_requests was loaded after {', '.join(untested)} last ran" in check.description
        # The next night, in the same instance, builds them after the load: the check passes again.
        assert run_pipeline(landing, warehouse)
    assert _held_checks(warehouse)["serving_requests"] == (True, 0, {})
