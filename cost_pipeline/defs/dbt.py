"""The dbt project as Dagster assets: every model is an asset, every dbt test an asset check.

A model stored as a table reports its row count (``dagster/row_count``): a post-hook on every model logs it
(dbt_project/macros/log_row_count.sql) and ``with_row_counts`` attaches it to the model's output. dagster-dbt's own
``fetch_row_counts`` would query the warehouse from this process while dbt holds DuckDB's write lock.

The manifest is prepared explicitly (``cost-pipeline prepare``, the CLI, the test session) or by
``dagster dev`` through ``prepare_if_dev``; importing this module never runs dbt otherwise.
"""

import contextlib
import os
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from importlib.metadata import version
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
from dagster_dbt import (
    DagsterDbtCliRuntimeError,
    DagsterDbtTranslator,
    DagsterDbtTranslatorSettings,
    DbtCliInvocation,
    DbtCliResource,
    DbtProject,
    dbt_assets,
)
from dagster_dbt.asset_utils import get_manifest_and_translator_from_dbt_assets
from packaging.version import Version
from pydantic import PrivateAttr

from cost_pipeline.contract import load_contract
from cost_pipeline.dbt_failures import (
    STORED_FAILURES,
    HoldRefused,
    failed_tests,
    failure_report,
    failures_table,
    held_rows,
    hold_rows,
    only_tests_failed,
    read_places,
    store_failing_rows,
    stores_failures,
)
from cost_pipeline.dbt_setup import (
    dbt_project,
    keep_partial_parse,
    prepare_manifest,
    prune_build_folders,
    seed_partial_parse,
)
from cost_pipeline.dbt_test_descriptions import describe_test
from cost_pipeline.dbt_warm import SUPPORTED as WARM_SUPPORTED
from cost_pipeline.dbt_warm import WARM_VARIABLE, WarmDbt
from cost_pipeline.defs.resources import Warehouse
from cost_pipeline.duckdb_memory import dbt_environment
from cost_pipeline.ingest.lib.warehouse import HELD_RULE
from cost_pipeline.ingest.registry import SOURCES
from cost_pipeline.model_builds import record_results, record_start

# Under `dagster dev` the manifest is rebuilt at load so model edits show at once. dagster-dbt's own preparer
# looks for dbt on PATH, which an unactivated venv lacks; prepare_manifest uses the dbt beside this Python.
if dbt_project.preparer.using_dagster_dev():
    prepare_manifest()


class ProjectDbtCli(DbtCliResource):
    """dagster-dbt's dbt resource without three start-up costs every night paid for nothing:

    - dbt's start-up, before each dbt command: set up for a run, the resource starts a process that imports dbt and
      builds its JSON schemas while the run's first steps go on (once per process: a fork server), and each command
      runs in a process forked from it (``cost_pipeline.dbt_warm``; docs/benchmarks.md). Only through
      ``cost-pipeline-dbt`` beside this Python.
    - ``dbt --version`` in a subprocess, a whole dbt start-up, to learn the version of the dbt it runs. The dbt beside
      this Python (directly or through ``cost-pipeline-dbt``) is the installed dbt-core, whose version its package
      metadata gives (another dbt still gets asked).
    - A dbt adapter built in this process (profile, project and dbt's macros loaded) for ``fetch_row_counts`` and
      ``fetch_column_metadata``, which ``cost_models`` never calls: the build runs in dbt's own process.
    """

    def _beside_this_python(self, *names: str) -> bool:
        return Path(self.dbt_executable) in {Path(sys.executable).parent / name for name in names}

    @cached_property
    def _cli_version(self) -> Version:
        if self._beside_this_python("dbt", "cost-pipeline-dbt"):
            return Version(version("dbt-core"))
        return super()._cli_version

    def _initialize_dbt_core_adapter(self, args: Sequence[str]) -> None:
        return None

    _warm: list[WarmDbt] = PrivateAttr(default_factory=list)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        super().setup_for_execution(context)
        if WARM_SUPPORTED and self._beside_this_python("cost-pipeline-dbt"):
            try:
                self._warm.append(WarmDbt())
            except Exception as error:  # noqa: BLE001 - a head start is not worth a night: dbt then starts as before
                context.log.warning(f"dbt could not be started ahead of its step, it starts when needed: {error!r}")

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        warm, self._warm = self._warm, []
        for waiting in warm:
            waiting.close()
        super().teardown_after_execution(context)

    def _waiting_address(self) -> str | None:
        """The address of a process waiting for this command: the one started ahead, or for a later command (a
        night's second build, the queries that explain failed tests) one forked for it, as warm; None without."""
        if not self._warm:
            return None
        address = self._warm[-1].take()
        if address is None:
            try:
                self._warm.append(WarmDbt())
            except Exception:  # noqa: BLE001 - as at setup: dbt then starts in the command's own process
                return None
            address = self._warm[-1].take()
        return address

    def cli(self, args: Sequence[str], **kwargs: Any) -> DbtCliInvocation:
        """dagster-dbt's dbt command, run in a process dbt is imported in already (``cost_pipeline.dbt_warm``)."""
        address = self._waiting_address()
        if address is None:
            return super().cli(args, **kwargs)
        os.environ[WARM_VARIABLE] = address  # dagster-dbt starts dbt with this process's environment
        try:
            return super().cli(args, **kwargs)
        finally:
            del os.environ[WARM_VARIABLE]


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

    def get_asset_check_spec(
        self, asset_spec: dg.AssetSpec, manifest: Mapping[str, Any], unique_id: str, project: DbtProject | None
    ) -> dg.AssetCheckSpec | None:
        """dagster-dbt's check, described: what the test checks, in words (``describe_test``)."""
        spec = super().get_asset_check_spec(asset_spec, manifest, unique_id, project)
        if spec is None or spec.description:
            return spec
        return spec._replace(description=describe_test(manifest["nodes"][unique_id]))

    def get_owners(self, dbt_resource_props: Mapping[str, Any]) -> Sequence[str] | None:
        named = super().get_owners(dbt_resource_props)
        if named or dbt_resource_props["resource_type"] not in ("model", "snapshot"):
            return named
        return load_contract().owners(dbt_resource_props["config"]["schema"], kind="layers")


class DbtTestsFailed(Exception):
    """Error-severity dbt tests failed: each named with its rule, its failing rows' landing files and lines, and
    where the rows are stored (``cost_pipeline.dbt_failures``)."""


ROW_COUNT_LOG = "cost_pipeline row_count "  # the post-hook's log line, then the count


def with_row_counts(
    invocation: DbtCliInvocation, context: dg.AssetExecutionContext
) -> Iterator[dg.Output | dg.AssetCheckResult | dg.AssetObservation | dg.AssetMaterialization]:
    """dagster-dbt's events of ``invocation``, each model's output carrying the row count its post-hook logged, and
    each warn-severity test's check result of warn severity whether it passed or not (dagster-dbt says ERROR for a
    passing one), naming the table that keeps its failing rows (``STORED_FAILURES``) when the test stores them."""
    counts: dict[str, int] = {}
    warn_tests = {
        node["name"]: failures_table(node) if stores_failures(node) else None
        for node in invocation.manifest["nodes"].values()
        if node["resource_type"] == "test" and str(node["config"].get("severity", "error")).lower() == "warn"
    }
    for event in invocation.stream_raw_events():
        info = event.raw_event["info"]
        if info["name"] == "JinjaLogInfo" and info["msg"].startswith(ROW_COUNT_LOG):
            node = event.raw_event["data"].get("node_info", {}).get("unique_id")
            if node:
                counts[node] = int(info["msg"].removeprefix(ROW_COUNT_LOG))
            continue
        for asset_event in event.to_default_asset_events(
            manifest=invocation.manifest,
            dagster_dbt_translator=invocation.dagster_dbt_translator,
            context=context,
            target_path=invocation.target_path,
            project=invocation.project,
        ):
            node = asset_event.metadata.get("unique_id")
            counted = counts.pop(node.value, None) if isinstance(node, dg.TextMetadataValue) else None
            if isinstance(asset_event, dg.Output) and counted is not None:
                asset_event = asset_event.with_metadata({**asset_event.metadata, "dagster/row_count": counted})
            if isinstance(asset_event, dg.AssetCheckResult) and asset_event.check_name in warn_tests:
                stored = warn_tests[asset_event.check_name]
                metadata = (
                    {**asset_event.metadata, STORED_FAILURES: dg.MetadataValue.text(stored)}
                    if stored
                    else asset_event.metadata
                )
                asset_event = asset_event._replace(severity=dg.AssetCheckSeverity.WARN, metadata=metadata)
            yield asset_event


# dbt's own log file, beside each build's artifacts, keeps warnings and errors only. At its default (debug, as JSON) it
# gets every SQL statement and event of the build, about 10 MB a demo night and some 15 % of dbt's CPU time; the
# build's info-level events still reach Dagster (and `cost-pipeline -v`) through dbt's standard output.
DBT_GLOBAL_FLAGS = ["--log-level-file", "warn"]

# dbt's unit tests check the models' SQL against fixed inputs, which no night's data changes: they ran in every
# night's build for a quarter of its dbt time. As dbt advises, they run where the SQL changes instead, in the test
# suite (tests/test_dbt_unit_tests.py) and in a developer's own `dbt build`.
NIGHTLY_BUILD = ["build", "--exclude-resource-type", "unit_test"]


@dbt_assets(
    manifest=dbt_project.manifest_path,
    project=dbt_project,
    dagster_dbt_translator=CostDbtTranslator(settings=DagsterDbtTranslatorSettings(enable_asset_checks=True)),
)
def cost_models(context: dg.AssetExecutionContext, dbt: DbtCliResource, warehouse: Warehouse):
    # dbt runs in its own process, from the warehouse's folder (cost-pipeline-dbt): hand it the absolute path.
    os.environ["COST_WAREHOUSE"] = str(warehouse.file)
    # and the run's DuckDB memory limit, which the profile's settings read.
    os.environ.update(dbt_environment(warehouse.memory_limit))
    # A build whose failed tests all hold landing rows builds once more without those rows (cost_pipeline.dbt_failures).
    # Each build's events are gathered, not streamed: the first one's models and checks, built again, report once.
    # Each selected model's outcome is kept in ops.model_builds (cost_pipeline.model_builds): publishing reads it.
    manifest = get_manifest_and_translator_from_dbt_assets([cost_models])[0]
    try:
        for attempt in (1, 2):
            with contextlib.closing(warehouse.connect()) as con:  # until dbt says otherwise, nothing is built
                record_start(con, manifest, _selected_models(context, manifest), context.run.run_id)
            # A target folder of its own per build, named as dagster-dbt names them, seeded with the partial-parse
            # file of the last build on this warehouse so dbt does not re-parse the whole project (see dbt_setup).
            target = (
                dbt_project.project_dir
                / "target"
                / f"{context.op_def.name}-{context.run_id[:7]}-{uuid.uuid4().hex[:7]}"
            )
            seed_partial_parse(target, warehouse.file)
            invocation = dbt.cli(NIGHTLY_BUILD, context=context, target_path=target)
            events: list = []
            try:
                events.extend(with_row_counts(invocation, context))
                _record_outcomes(invocation, warehouse, context.run.run_id)
                break
            except DagsterDbtCliRuntimeError as error:
                try:
                    _record_outcomes(invocation, warehouse, context.run.run_id)
                except Exception as unrecorded:  # noqa: BLE001 - dbt's failure is the one to raise
                    context.log.warning(
                        f"the build's outcomes were not recorded, its models stay unbuilt: {unrecorded!r}"
                    )
                failed = _explained(context, dbt, invocation, target, warehouse)
                if not failed:
                    yield from events
                    raise
                if attempt == 2 or not all(test.holdable for test in failed):
                    yield from events
                    raise DbtTestsFailed(failure_report(failed, str(error))) from None
                try:
                    with contextlib.closing(warehouse.connect()) as con:
                        moved = hold_rows(con, failed)
                except (HoldRefused, duckdb.Error) as refused:
                    yield from events
                    note = f"not quarantined: {refused}"
                    raise DbtTestsFailed(failure_report(failed, str(error), note)) from None
                context.log.warning(
                    f"{sum(moved.values())} landing row(s) passed the contract and failed dbt tests: quarantined "
                    "(rule dbt:<test>); the project is built again without them.\n" + failure_report(failed, str(error))
                )
            finally:
                keep_partial_parse(target, warehouse.file)
        yield from events
    finally:
        prune_build_folders(context.op_def.name)


def _selected_models(context: dg.AssetExecutionContext, manifest: Mapping[str, Any]) -> list[str]:
    """The unique ids of the dbt models and snapshots this step builds."""
    translator = CostDbtTranslator()
    selected = set(context.selected_asset_keys)
    return [
        unique_id
        for unique_id, node in manifest["nodes"].items()
        if node["resource_type"] in ("model", "snapshot") and translator.get_asset_key(node) in selected
    ]


def _record_outcomes(invocation: DbtCliInvocation, warehouse: Warehouse, run_id: str) -> None:
    """Each model's outcome in ``invocation`` into ops.model_builds."""
    results = invocation.get_artifact("run_results.json")
    with contextlib.closing(warehouse.connect()) as con:
        record_results(con, results, invocation.manifest, run_id)


def _explained(
    context: dg.AssetExecutionContext,
    dbt: DbtCliResource,
    invocation: DbtCliInvocation,
    target: Path,
    warehouse: Warehouse,
) -> list:
    """The failed tests of a build that failed only tests, their failing rows stored and read back. None when a node
    errored (a model that could not be built is the night's cause, and dbt's own error names it), when dbt wrote no
    results, or when explaining failed in any way: the night's error is then dbt's, unchanged."""
    try:
        results = invocation.get_artifact("run_results.json")
        failed = failed_tests(results, invocation.manifest) if only_tests_failed(results) else []
        if not failed:
            return []
        stored = store_failing_rows(dbt, failed, invocation.manifest, target / "stored", warehouse.file)
        return read_places(warehouse.file, failed, stored)
    except Exception as error:  # noqa: BLE001 - whatever went wrong, dbt's own error is the one to raise
        context.log.warning(f"the failed dbt tests could not be explained: {error!r}")
        return []


HELD_CHECK = "no_held_rows"


def _built_from(raw: dg.AssetKey) -> list[dg.AssetKey]:
    """The dbt models built from ``raw``: its staging models, and an incremental model's inputs that read its rows
    (int_requests_inputs: each request log's span)."""
    return [key for key, upstream in cost_models.asset_deps.items() if raw in upstream]


def _held_check_spec(source: str) -> dg.AssetCheckSpec:
    """The check on ``raw/<source>``, evaluated after the dbt models built from it."""
    raw = dg.AssetKey(["raw", source])
    return dg.AssetCheckSpec(
        HELD_CHECK,
        asset=raw,
        additional_deps=_built_from(raw),
        description=f"Warns when rows of {source} passed the contract and failed a dbt test after the night's build: "
        f"they are quarantined (rule {HELD_RULE}<test>) and tonight's figures leave them out (the contract needs a "
        "rule); and when raw was loaded after the dbt models built from it last ran, so its rows are not tested yet.",
    )


def _untested(instance: dg.DagsterInstance, raw: dg.AssetKey) -> list[str]:
    """The dbt models built from ``raw`` that were not materialised since ``raw`` last was (a raw asset materialised
    alone): until they run, its new rows are not tested, and none of them can be held."""
    loaded = instance.get_latest_materialization_event(raw)
    if loaded is None:
        return []
    untested = []
    for key in _built_from(raw):
        built = instance.get_latest_materialization_event(key)
        if built is None or built.timestamp < loaded.timestamp:
            untested.append(key.to_user_string())
    return untested


@dg.multi_asset_check(
    specs=[_held_check_spec(name) for name, source in SOURCES.items() if source.rows_stand_alone],
    name="held_rows_checks",
    can_subset=True,  # a job of one source's raw asset (its sensor's) runs that source's check only
)
def held_rows_checks(context: dg.AssetCheckExecutionContext, warehouse: Warehouse) -> Iterator[dg.AssetCheckResult]:
    """One result per source whose rows can be held (``Source.rows_stand_alone``): the rows raw holds back after a
    failed dbt test, by test, and the first file and line (``cost_pipeline.dbt_failures.held_rows``)."""
    with contextlib.closing(warehouse.connect()) as con:
        held = held_rows(con)
    for check in context.selected_asset_check_keys:
        source = check.asset_key.path[-1]
        mine = [(test, rows, first) for name, test, rows, _, first in held if name == source]
        deliveries = sum(later for name, _, _, later, _ in held if name == source)
        rows = sum(rows for _, rows, _ in mine)
        untested = _untested(context.instance, check.asset_key)
        found = []
        if rows or deliveries:
            found.append(f"{rows:,} row(s) held and {deliveries:,} other deliveries of them, first: {mine[0][2]}")
        if untested:
            found.append(
                f"raw/{source} was loaded after {', '.join(untested)} last ran: its new rows are not tested yet, "
                "nor in the figures of a model stored as a table (materialise the models built from it)"
            )
        yield dg.AssetCheckResult(
            asset_key=check.asset_key,
            check_name=HELD_CHECK,
            passed=not found,
            severity=dg.AssetCheckSeverity.WARN,
            description="; ".join(found) or None,
            metadata={
                "rows_held": rows,
                "earlier_deliveries_held": deliveries,
                "rows_held_by_test": dg.MetadataValue.json({test: n for test, n, _ in mine}),
                "first_held": mine[0][2] if mine else "",
                "models_not_run_since_load": dg.MetadataValue.json(untested),
            },
        )
