"""The project works with the ``dg`` CLI (issue 11): ``[tool.dg]`` in pyproject.toml points it at
``cost_pipeline.definitions``; ``dg list defs`` lists the same assets as the definitions, and ``dg launch --assets``
materialises one asset into the warehouse the environment names, as ``dagster asset materialize`` does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

from cost_pipeline.demo import write_demo_landing
from tests.helpers import query
from tests.servers import graphql, local_dagster

ROOT = Path(__file__).resolve().parents[1]
DG = str(Path(sys.executable).parent / "dg")


def _dg(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [DG, *argv], cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=600
    )


def test_dg_lists_the_definitions_assets():
    from cost_pipeline.definitions import defs

    listed = _dg("list", "defs", "--json")
    assert listed.returncode == 0, listed.stderr[-3000:]
    keys = {asset["asset_key"] for asset in json.loads(listed.stdout)["assets"]}
    expected = {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == expected
    assert {"raw/batch_registry", "marts/fct_batch_costs", "published/marts"} <= keys


def test_dg_launch_materialises_one_asset_into_the_named_warehouse(tmp_path):
    landing = write_demo_landing(tmp_path / "landing")
    warehouse, home = tmp_path / "warehouse.duckdb", tmp_path / "dagster_home"
    home.mkdir()
    env = {"COST_LANDING_DIR": str(landing), "COST_WAREHOUSE": str(warehouse), "DAGSTER_HOME": str(home)}
    launched = _dg("launch", "--assets", "raw/batch_registry", env=env)
    assert launched.returncode == 0, launched.stderr[-3000:]
    assert query(warehouse, "select batch_id from raw.batch_registry order by 1") == [("B-10",), ("B-7",), ("B-8",)]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs()
        assert run.status == dg.DagsterRunStatus.SUCCESS
        assert instance.get_latest_materialization_event(dg.AssetKey(["raw", "batch_registry"])) is not None


def test_dg_dev_serves_the_definitions_assets(tmp_path):
    from cost_pipeline.definitions import defs

    home = tmp_path / "dagster_home"
    home.mkdir()
    # A warehouse named as the demo's: dagster dev prepares the manifest as it loads, and the session's is current.
    env = {"COST_LANDING_DIR": str(tmp_path / "landing"), "COST_WAREHOUSE": str(tmp_path / "warehouse.duckdb")}
    with local_dagster([DG, "dev"], {**env, "DAGSTER_HOME": str(home)}, tmp_path / "dg-dev.log") as url:
        served = graphql(url, "{ assetNodes { assetKey { path } } }")["assetNodes"]
    expected = {key.to_user_string() for key in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"/".join(node["assetKey"]["path"]) for node in served} == expected
