"""The dbt unit tests (models/**/_*unit_tests.yml) pass. The nightly build leaves them out (cost_pipeline/defs/dbt.py
NIGHTLY_BUILD): their inputs are fixed, so they are run here, against a copy of the demo warehouse whose relations
give the fixtures their column types."""

from __future__ import annotations

import shutil

from tests.helpers import dbt_test

ON_RUN_START = "operation.cost_pipeline.cost_pipeline-on-run-start-0"


def test_every_dbt_unit_test_passes(demo_run, tmp_path):
    assert demo_run.succeeded
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(demo_run.warehouse, warehouse)
    code, out, results = dbt_test(tmp_path, warehouse, "test_type:unit")
    # Besides the unit tests only the project's on-run-start hook runs (a no-op off Spark: macros/spark_raw_tables.sql)
    statuses = {result["unique_id"]: result["status"] for result in results if result["unique_id"] != ON_RUN_START}
    assert code == 0, out[-3000:]
    assert len(statuses) >= 20 and all(node.startswith("unit_test.") for node in statuses)
    assert set(statuses.values()) == {"pass"}
