"""Every DuckDB connection on the warehouse runs under an explicit memory limit and spills beside the warehouse
(issue 15): ingest's connection, publishing and dbt's profile, from the resource, the environment or the default."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from cost_pipeline.dbt_setup import manifest_fingerprint
from cost_pipeline.defs.resources import Warehouse
from cost_pipeline.duckdb_memory import DEFAULT_MEMORY_LIMIT, MEMORY_LIMIT_VARIABLE, dbt_environment
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.publish import publish
from tests.helpers import dbt_show

SETTINGS = "select current_setting('memory_limit'), current_setting('temp_directory'), current_setting('threads')"


def _default_threads() -> int:
    con = duckdb.connect()
    try:
        return con.execute("select current_setting('threads')").fetchone()[0]
    finally:
        con.close()


def _settings(con: duckdb.DuckDBPyConnection) -> tuple[str, str, int]:
    try:
        return con.execute(SETTINGS).fetchone()
    finally:
        con.close()


def test_an_ingest_connection_runs_under_the_resource_limit_and_spills_beside_the_warehouse(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    warehouse = Warehouse(path=str(tmp_path / "night.duckdb"), memory_limit="300MiB")
    limit, temp, threads = _settings(warehouse.connect(readable=landing))  # locked down, as ingest opens it
    assert limit == "300.0 MiB"
    assert temp == str(tmp_path / "night.duckdb.tmp")
    assert threads == _default_threads()


def test_the_limit_comes_from_the_environment_else_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MEMORY_LIMIT_VARIABLE, raising=False)
    assert DEFAULT_MEMORY_LIMIT == "3GiB"
    assert _settings(connect(tmp_path / "w.duckdb"))[0] == "3.0 GiB"
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "700MiB")
    assert _settings(connect(tmp_path / "w.duckdb"))[0] == "700.0 MiB"
    # The resource's field, set in run config, wins over the environment.
    assert _settings(Warehouse(path=str(tmp_path / "w.duckdb"), memory_limit="1GiB").connect())[0] == "1.0 GiB"


def test_the_limit_is_a_run_config_field_of_the_warehouse_resource(tmp_path: Path) -> None:
    @dg.asset
    def limit_seen(warehouse: Warehouse) -> str:
        return _settings(warehouse.connect())[0]

    result = dg.materialize(
        [limit_seen],
        resources={"warehouse": Warehouse(path=str(tmp_path / "w.duckdb"))},
        run_config={
            "resources": {"warehouse": {"config": {"path": str(tmp_path / "w.duckdb"), "memory_limit": "2GiB"}}}
        },
    )
    assert result.output_for_node("limit_seen") == "2.0 GiB"


def test_publishing_runs_under_the_limit(tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    duckdb.connect(str(warehouse)).close()
    with pytest.raises(ValueError, match=MEMORY_LIMIT_VARIABLE):
        publish(warehouse, memory_limit="a lot")


def test_dbt_runs_under_the_limit_and_spills_beside_the_warehouse(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse.duckdb"
    env = {**os.environ, "COST_WAREHOUSE": str(warehouse), **dbt_environment("300MiB")}
    row = dbt_show(tmp_path, SETTINGS, env)
    assert list(row.values()) == ["300.0 MiB", str(tmp_path / "warehouse.duckdb.tmp"), _default_threads()]


def test_the_limit_does_not_make_dbt_parse_again(monkeypatch: pytest.MonkeyPatch) -> None:
    before = manifest_fingerprint()
    monkeypatch.setenv(MEMORY_LIMIT_VARIABLE, "123MiB")
    assert manifest_fingerprint() == before
