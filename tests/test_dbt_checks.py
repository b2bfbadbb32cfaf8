"""Every dbt data test is an asset check in Dagster (issue 11): none is logged as a bare observation, which the UI
shows on no asset and no check history. A singular test that reads several models names the one it checks
(``meta.dagster.ref``); dagster-dbt cannot choose for it."""

import json

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
