"""The dbt project on Apache Spark (issue 15, beyond one machine): `dbt build --target spark` (dbt-spark's session
method, a local pyspark) over the demo night's raw tables, every model and snapshot as a night builds them, and the
project's own data tests: every singular test, and one test of each generic test of the project (macros/tests/: a
generic test's SQL is one macro whatever model it tests; the night runs all of them on DuckDB, its unit tests
too: tests/test_dbt_unit_tests.py; dbt's built-in generic tests, whose SQL each adapter ships, run on DuckDB every
night). Every mart equal to DuckDB's, money to the cent.
Skipped, saying so, where no Java runtime is installed (`.ci/run` installs one)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, warehouse_folder_dbt_executable
from cost_pipeline.defs.dbt import NIGHTLY_BUILD
from cost_pipeline.duckdb_session import connect
from cost_pipeline.spark_raw import export_raw

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(
        shutil.which("java") is None and not os.environ.get("JAVA_HOME"), reason="no Java runtime for Spark"
    ),
]

# Hashes of a version's figures as text: each engine writes a decimal or a double as text its own way, so a hash
# is the engine's (docs/spark.md). Every figure beside it is compared.
ENGINE_TEXT_HASHES = {"content_hash"}
# dbt's built-in generic tests: each adapter ships their SQL (dbt-spark's own), so on Spark the project's SQL is what
# is tested: its models, snapshots, generic tests (macros/tests/) and singular tests.
BUILT_IN_TESTS = {"unique", "not_null", "accepted_values", "relationships"}


def _spark_selection() -> list[str]:
    """Every model and snapshot, every singular test, and the first test (by name) of each of the project's generic
    tests: 157 tests on Spark took a quarter of its night, and a generic test's SQL is its one macro."""
    nodes = json.loads((DBT_PROJECT_DIR / "target" / "manifest.json").read_text("utf-8"))["nodes"].values()
    first: dict[str, str] = {}
    for node in sorted((n for n in nodes if n["resource_type"] == "test"), key=lambda n: n["name"]):
        generic = (node.get("test_metadata") or {}).get("name")
        if generic is None:
            first[node["name"]] = node["name"]  # a singular test: each its own SQL
        elif generic not in BUILT_IN_TESTS:
            first.setdefault(generic, node["name"])
    assert {"sums_match", "not_null_columns", "unique_combination", "in_contract_enumeration"} <= first.keys()
    return ["resource_type:model", "resource_type:snapshot", *sorted(first.values())]


def _spark_build(warehouse: Path, scratch: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "COST_SPARK_RAW": str(scratch / "raw"),
        "COST_SPARK_WAREHOUSE": str(scratch / "spark"),
    }
    env.pop("COST_WAREHOUSE", None)  # dbt stays in the scratch folder
    export_raw(warehouse, scratch / "raw")
    command = [warehouse_folder_dbt_executable(), *NIGHTLY_BUILD, "--target", "spark", "--select", *_spark_selection()]
    command += ["--indirect-selection", "empty"]  # a selected model's tests are not selected with it
    command += ["--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR)]
    command += ["--target-path", str(scratch / "target")]
    command += ["--log-path", str(scratch / "logs")]
    # cwd: any default folder of Spark's lands in the scratch folder, not the repository.
    return subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, timeout=1500)


def _compared(column: str, data_type: str) -> str:
    """A column as both sides are compared: doubles (ratios, not money) to 9 decimals, the rest as DuckDB has it."""
    if data_type in ("DOUBLE", "FLOAT"):
        return f'round("{column}", 9) as "{column}"'
    return f'cast("{column}" as {data_type}) as "{column}"'


@pytest.fixture(scope="module")
def spark_night(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert demo_run.succeeded
    scratch = tmp_path_factory.mktemp("spark")
    result = _spark_build(demo_run.warehouse, scratch)
    lines = [line for line in result.stdout.splitlines() if "ERROR" in line or "FAIL" in line or "Done." in line]
    assert result.returncode == 0, "\n".join(lines[-40:]) or result.stderr[-4000:]
    return scratch / "spark"


def test_every_mart_on_spark_equals_duckdb(demo_run, spark_night: Path) -> None:
    con = connect()
    con.execute(f"attach '{demo_run.warehouse}' as duck (read_only)")
    marts = con.execute(
        "select table_schema, table_name from information_schema.tables "
        "where table_catalog = 'duck' and table_schema in ('marts', 'history') order by 1, 2"
    ).fetchall()
    assert len(marts) > 30
    differences: dict[str, object] = {}
    compared_with_rows = 0
    for schema, table in marts:
        columns = con.execute(
            "select column_name, data_type from information_schema.columns "
            "where table_catalog = 'duck' and table_schema = ? and table_name = ? order by ordinal_position",
            [schema, table],
        ).fetchall()
        kept = [(name, data_type) for name, data_type in columns if name not in ENGINE_TEXT_HASHES]
        folder = spark_night / f"{schema}.db" / table
        files = sorted(folder.glob("*.parquet"))
        duck_rows = con.execute(f'select count(*) from duck.{schema}."{table}"').fetchone()[0]
        if not folder.is_dir():
            differences[f"{schema}.{table}"] = "no table on Spark"
            continue
        if not files:  # Spark writes no file for a table without rows
            if duck_rows:
                differences[f"{schema}.{table}"] = f"no rows on Spark, {duck_rows} on DuckDB"
            continue
        compared_with_rows += 1 if duck_rows else 0
        spark_table = f"read_parquet({[str(f) for f in files]})"
        spark_columns = {name for name, *_ in con.execute(f"describe select * from {spark_table}").fetchall()}
        if {name for name, _ in columns} != spark_columns:
            differences[f"{schema}.{table}"] = f"columns differ: {spark_columns ^ {name for name, _ in columns}}"
            continue
        select = ", ".join(_compared(name, data_type) for name, data_type in kept)
        duck = f'select {select} from duck.{schema}."{table}"'
        spark = f"select {select} from {spark_table}"
        only_duck = con.execute(f"select count(*) from ({duck} except all {spark})").fetchone()[0]
        only_spark = con.execute(f"select count(*) from ({spark} except all {duck})").fetchone()[0]
        if only_duck or only_spark:
            differences[f"{schema}.{table}"] = (only_duck, only_spark, duck_rows)
    assert not differences, f"rows only in DuckDB, only in Spark, DuckDB's rows: {differences}"
    assert compared_with_rows > 30
    spark_total = con.execute(
        f"select sum(total_cost) from read_parquet('{spark_night}/marts.db/fct_batch_costs/*.parquet')"
    ).fetchone()[0]
    assert spark_total == con.execute("select sum(total_cost) from duck.marts.fct_batch_costs").fetchone()[0] > 0
