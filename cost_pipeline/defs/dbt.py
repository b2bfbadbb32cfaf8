"""The dbt project as Dagster assets: every model is an asset, every dbt test an asset check.

The manifest is prepared explicitly (``cost-pipeline prepare``, the CLI, the test session) or by
``dagster dev`` through ``prepare_if_dev``; importing this module never runs dbt otherwise.
"""

import os
import sys
import uuid
from collections.abc import Mapping, Sequence
from functools import cached_property
from importlib.metadata import version
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DagsterDbtTranslatorSettings, DbtCliResource, dbt_assets
from packaging.version import Version

from cost_pipeline.contract import load_contract
from cost_pipeline.dbt_setup import dbt_project, keep_partial_parse, prepare_manifest, seed_partial_parse
from cost_pipeline.defs.resources import Warehouse
from cost_pipeline.duckdb_memory import dbt_environment

# Under `dagster dev` the manifest is rebuilt at load so model edits show at once. dagster-dbt's own preparer
# looks for dbt on PATH, which an unactivated venv lacks; prepare_manifest uses the dbt beside this Python.
if dbt_project.preparer.using_dagster_dev():
    prepare_manifest()


class ProjectDbtCli(DbtCliResource):
    """dagster-dbt's dbt resource without two start-up costs every night paid for nothing (about 2.5 s of CPU):

    - ``dbt --version`` in a subprocess, a whole dbt start-up, to learn the version of the dbt it runs. The dbt beside
      this Python is the installed dbt-core, whose version its package metadata gives (another dbt still gets asked).
    - A dbt adapter built in this process (profile, project and dbt's macros loaded) for ``fetch_row_counts`` and
      ``fetch_column_metadata``, which ``cost_models`` never calls: the build runs in dbt's own process.
    """

    @cached_property
    def _cli_version(self) -> Version:
        if Path(self.dbt_executable) == Path(sys.executable).parent / "dbt":
            return Version(version("dbt-core"))
        return super()._cli_version

    def _initialize_dbt_core_adapter(self, args: Sequence[str]) -> None:
        return None


class CostDbtTranslator(DagsterDbtTranslator):
    """Models keyed by schema and name (["marts", "fct_batch_compute"]), grouped by layer and owned as the contract
    says for their layer (``operations.owners.layers``) unless the model's ``meta: {dagster: {owners: [...]}}``
    names its own."""

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> dg.AssetKey:
        if dbt_resource_props["resource_type"] in ("model", "snapshot"):
            return dg.AssetKey([dbt_resource_props["config"]["schema"], dbt_resource_props["name"]])
        return super().get_asset_key(dbt_resource_props)

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        if dbt_resource_props["resource_type"] == "model":
            return dbt_resource_props["config"]["schema"]
        return super().get_group_name(dbt_resource_props)

    def get_owners(self, dbt_resource_props: Mapping[str, Any]) -> Sequence[str] | None:
        named = super().get_owners(dbt_resource_props)
        if named or dbt_resource_props["resource_type"] not in ("model", "snapshot"):
            return named
        return load_contract().owners(dbt_resource_props["config"]["schema"], kind="layers")


@dbt_assets(
    manifest=dbt_project.manifest_path,
    project=dbt_project,
    dagster_dbt_translator=CostDbtTranslator(settings=DagsterDbtTranslatorSettings(enable_asset_checks=True)),
)
def cost_models(context: dg.AssetExecutionContext, dbt: DbtCliResource, warehouse: Warehouse):
    # dbt runs in its own process from the project folder: hand it the warehouse as an absolute path.
    os.environ["COST_WAREHOUSE"] = str(warehouse.file)
    # and the run's DuckDB memory limit, which the profile's settings read.
    os.environ.update(dbt_environment(warehouse.memory_limit))
    # A target folder of its own per build, named as dagster-dbt names them, seeded with the partial-parse file of
    # the last build on this warehouse so dbt does not re-parse the whole project (see dbt_setup).
    target = dbt_project.project_dir / "target" / f"{context.op_def.name}-{context.run_id[:7]}-{uuid.uuid4().hex[:7]}"
    seed_partial_parse(target, warehouse.file)
    try:
        yield from dbt.cli(["build"], context=context, target_path=target).stream()
    finally:
        keep_partial_parse(target, warehouse.file)
