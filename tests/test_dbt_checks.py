"""dbt in Dagster (issue 11). Every dbt data test is an asset check: none is logged as a bare observation, which the
UI shows on no asset and no check history. A singular test that reads several models names the one it checks
(``meta.dagster.ref``); dagster-dbt cannot choose for it. Every model stored as a table reports its row count."""

import json

import dagster as dg

from cost_pipeline.dagster_home import warehouse_instance
from cost_pipeline.dbt_setup import dbt_project
from cost_pipeline.defs.dbt import cost_models


def test_every_dbt_data_test_is_an_asset_check():
    manifest = json.loads(dbt_project.manifest_path.read_text())
    tests = {
        node["name"]: node
        for node in manifest["nodes"].values()
        if node["resource_type"] == "test" and node["package_name"] == "cost_pipeline"
    }
    checks = {key.name for key in cost_models.check_keys}
    missing = sorted(set(tests) - checks)
    assert not missing, f"dbt tests Dagster would only observe, not check: {missing}"
    # The warn-level audit test is among them: a warning check, not an observation.
    assert "storage_billed_and_inventoried" in checks
    assert tests["storage_billed_and_inventoried"]["config"]["severity"].lower() == "warn"


def test_every_stored_model_reports_the_rows_it_holds(demo_run):
    assert demo_run.succeeded
    manifest = json.loads(dbt_project.manifest_path.read_text())
    stored = [
        (node["config"]["schema"], node["name"])
        for node in manifest["nodes"].values()
        if node["resource_type"] == "model" and node["config"]["materialized"] in ("table", "incremental")
    ]
    assert len(stored) > 40
    reported = {}
    with warehouse_instance(demo_run.warehouse) as instance:
        for schema, name in stored:
            event = instance.get_latest_materialization_event(dg.AssetKey([schema, name]))
            assert event is not None, f"{schema}.{name} never materialised"
            reported[f"{schema}.{name}"] = event.asset_materialization.metadata["dagster/row_count"].value
    counted = {
        f"{schema}.{name}": demo_run.query(f'select count(*) from "{schema}"."{name}"')[0][0] for schema, name in stored
    }
    assert reported == counted
    assert reported["marts.fct_batch_costs"] == 4
