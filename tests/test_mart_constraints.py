"""Never-null columns, checked once a night without a dbt node per column.

Each enforced mart's yml states ``constraints: [{type: not_null}]`` where a separate not_null data test would
otherwise run once a night per column; the database refuses the null when the table is built, so nothing is
checked twice. A column null only in an unpriced row keeps its data test (``not_null`` with a ``where``). Staging
and intermediate models (views and tables without a contract) name their never-null columns in one model-level
``not_null_columns`` test (tests/generic/not_null_columns.sql).
"""

from __future__ import annotations

import json
import os

import duckdb
import pytest

from cost_pipeline.dbt_setup import manifest_path
from tests.helpers import dbt_show


def _not_null_constraints() -> set[tuple[str, str]]:
    manifest = json.loads(manifest_path().read_text(encoding="utf-8"))
    return {
        (node["name"], column)
        for node in manifest["nodes"].values()
        if node["resource_type"] == "model"
        for column, spec in node["columns"].items()
        if any(c["type"] == "not_null" for c in spec.get("constraints", []))
    }


def test_every_not_null_constraint_is_a_not_null_column_of_the_demo_warehouse(demo_run):
    declared = _not_null_constraints()
    assert len(declared) > 100
    built = set(
        demo_run.query(
            "select table_name, column_name from information_schema.columns "
            "where table_schema = 'marts' and is_nullable = 'NO'"
        )
    )
    assert declared == built


def test_a_null_in_a_constrained_column_is_refused(demo_run, tmp_path):
    """The mart's own table refuses a row without a batch, naming the column."""
    warehouse = tmp_path / "warehouse.duckdb"
    warehouse.write_bytes(demo_run.warehouse.read_bytes())
    con = duckdb.connect(str(warehouse))
    try:
        with pytest.raises(duckdb.ConstraintException, match="fct_batch_what_if.batch_id"):
            con.execute("insert into marts.fct_batch_what_if (batch_id) values (null)")
    finally:
        con.close()


def test_no_not_null_data_test_is_left_on_an_enforced_mart():
    manifest = json.loads(manifest_path().read_text(encoding="utf-8"))
    enforced = {
        unique_id
        for unique_id, node in manifest["nodes"].items()
        if node["resource_type"] == "model" and node["config"].get("contract", {}).get("enforced")
    }
    unconditional = [
        node["name"]
        for node in manifest["nodes"].values()
        if node["resource_type"] == "test"
        and (node.get("test_metadata") or {}).get("name") == "not_null"
        and not node["config"].get("where")
        and set(node["depends_on"]["nodes"]) & enforced
    ]
    assert unconditional == []


def test_not_null_columns_returns_the_rows_with_a_null_and_names_the_column(tmp_path):
    rows = (
        "(select 1 as job_key, 'training' as phase union all select 2, cast(null as varchar) "
        "union all select null, 'analysis') as rows"
    )
    sql = (
        f"select count(*) as failing, string_agg(trim(null_columns), ',' order by null_columns) as named from "
        f"({{{{ test_not_null_columns(model=\"{rows}\", columns=['job_key', 'phase']) }}}}) as failures"
    )
    env = {**os.environ, "COST_WAREHOUSE": str(tmp_path / "warehouse.duckdb")}
    assert dbt_show(tmp_path, sql, env) == {"failing": 2, "named": "job_key,phase"}


def test_every_staging_and_intermediate_not_null_is_one_test_per_model():
    manifest = json.loads(manifest_path().read_text(encoding="utf-8"))
    per_column = [
        node["name"]
        for node in manifest["nodes"].values()
        if node["resource_type"] == "test"
        and (node.get("test_metadata") or {}).get("name") == "not_null"
        and not node["config"].get("where")
        and any(
            manifest["nodes"][d]["path"].split("/")[0] in ("staging", "intermediate")
            for d in node["depends_on"]["nodes"]
            if d.startswith("model.")
        )
    ]
    assert per_column == []
