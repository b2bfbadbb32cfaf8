"""dbt in Dagster (issue 11). Every dbt data test is an asset check: none is logged as a bare observation, which the
UI shows on no asset and no check history. A singular test that reads several models names the one it checks
(``meta.dagster.ref``); dagster-dbt cannot choose for it. Every model stored as a table reports its row count."""

import json

import dagster as dg

from cost_pipeline.dagster_home import warehouse_instance
from cost_pipeline.dbt_setup import dbt_project
from cost_pipeline.dbt_test_descriptions import describe_test
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


def test_every_check_says_what_it_checks():
    described = {spec.name: spec.description for spec in cost_models.check_specs}
    assert len(described) > 200 and all(described.values()), sorted(k for k, v in described.items() if not v)
    # A singular test by its opening comment; a generic one read from its arguments.
    assert described["storage_billed_and_inventoried"].startswith("A bucket-month both billed in a FOCUS export")
    relationships = [d for name, d in described.items() if name.startswith("relationships_fct_cost_lines_batch_id")]
    assert relationships == ["Every `batch_id` is a `batch_id` of `dim_batches`."]


def test_describe_test_reads_generic_tests_and_says_when_one_only_warns():
    sums = {
        "test_metadata": {
            "name": "sums_match",
            "kwargs": {"column_name": "amount", "compare_model": "ref('fct_cost_lines')", "compare_column": "amount"},
        },
        "column_name": "amount",
        "config": {"severity": "warn"},
    }
    assert describe_test(sums) == (
        "The sum of `amount` equals the sum of `amount` in `fct_cost_lines`, to the cent. "
        "A warning: the failing rows are listed and the night goes on."
    )
    assert describe_test({**sums, "description": "Said in the yml."}) == "Said in the yml."
    assert describe_test({"raw_code": "-- Rows that break it.\n-- Two lines.\nselect 1", "config": {}}) == (
        "Rows that break it. Two lines."
    )
    assert describe_test({"raw_code": "select 1", "config": {}}) is None
    day = {"name": "sum_at_most", "kwargs": {"group_by": ["entry_date", "first_name"], "at_most": 24}}
    assert describe_test({"test_metadata": day, "column_name": "hours", "config": {}}) == (
        "`hours` adds up to at most 24 over the rows of each `entry_date`, `first_name`."
    )


def test_warn_tests_report_warn_severity_whether_they_pass_or_fail(demo_run):
    assert demo_run.succeeded
    manifest = json.loads(dbt_project.manifest_path.read_text())
    warn = {
        node["name"]
        for node in manifest["nodes"].values()
        if node["resource_type"] == "test" and str(node["config"]["severity"]).lower() == "warn"
    }
    keys = [key for key in cost_models.check_keys if key.name in warn]
    assert len(keys) == len(warn) >= 3
    with warehouse_instance(demo_run.warehouse) as instance:
        latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
    evaluations = {key.name: record.event.dagster_event.event_specific_data for key, record in latest.items()}
    assert set(evaluations) == warn
    assert {e.severity for e in evaluations.values()} == {dg.AssetCheckSeverity.WARN}
    assert {e.passed for e in evaluations.values()} == {True, False}  # the demo has both
