"""One ingest asset per landing source, keyed as the dbt source it feeds (["raw", <table>]), built from the source
registry (``cost_pipeline.ingest.registry``): its description, its checks and its run config come from there.

Validation results are asset checks: ``rows_conserved`` (blocking: rows in must equal rows staged plus
rows quarantined), ``no_quarantined_rows`` (a warning that names files, lines and rules, never values) and
``no_missing_files`` (a warning naming each file gone from the landing folder whose rows raw keeps, and since when)
and ``source_loaded`` (a warning: the load raised what no rule foresaw, so it was rolled back and raw keeps the
source's rows of its last good night; the asset still materialises, so every other figure is rebuilt).
``raw/ignored_files`` records every landing file no source reads, and its ``no_ignored_files`` check warns.
A source with launch options (a dataclass of options in its declaration) takes them as the asset's run config,
under the same names and defaults. Each load that succeeds records when its files' bytes were first seen
(``ops.file_arrivals``), which the source's ``delivered_on_time`` freshness check then reads on the same connection
(``defs/freshness.py``; a source with alternatives has that check as a step of its own). The asset is subsettable:
a run that selects only that check (from the UI) evaluates it without loading; the other checks describe a load
and are refused without the asset. Owners come from the contract (``operations.owners``).
"""

import dataclasses
import typing
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import duckdb

from cost_pipeline.contract import load_contract
from cost_pipeline.defs.freshness import CHECK as DELIVERED_ON_TIME
from cost_pipeline.defs.freshness import Freshness
from cost_pipeline.defs.resources import LandingZone, Warehouse
from cost_pipeline.ingest.contract_tables import TABLES, load_contract_tables
from cost_pipeline.ingest.lib import arrivals
from cost_pipeline.ingest.lib.arrivals import record_arrivals
from cost_pipeline.ingest.lib.records import one_line
from cost_pipeline.ingest.lib.source import Source
from cost_pipeline.ingest.lib.warehouse import (
    BOOKKEEPING_TABLES,
    IngestReport,
    clear_failure,
    kept_report,
    record_failure,
    record_ignored,
)
from cost_pipeline.ingest.registry import SOURCES, unread_files

GROUP = "ingest"
# The warehouse file is held by another process (a BI reader, a manual query): wait and try again.
TRANSIENT_RETRIES = 5
TRANSIENT_WAIT_SECONDS = 2


def _owners(table: str) -> list[str]:
    """The asset's owners, from the contract (``operations.owners``)."""
    return load_contract().owners(table)


def _check_specs(table: str) -> list[dg.AssetCheckSpec]:
    key = dg.AssetKey(["raw", table])
    return [
        dg.AssetCheckSpec(
            "rows_conserved",
            asset=key,
            blocking=True,
            description="Rows in = rows staged + rows quarantined, for every file.",
        ),
        dg.AssetCheckSpec(
            "no_quarantined_rows",
            asset=key,
            description="Warns when any row broke the definitions contract (see raw.quarantine).",
        ),
        dg.AssetCheckSpec(
            "quarantine_not_growing",
            asset=key,
            description="Fails when more rows are quarantined than at the previous materialisation.",
        ),
        dg.AssetCheckSpec(
            "source_loaded",
            asset=key,
            description="Warns when the source's load failed: raw keeps its rows of the last good night (named), "
            "its figures are stale, and the error names the file.",
        ),
        dg.AssetCheckSpec(
            "no_missing_files",
            asset=key,
            description="Warns when a file loaded on an earlier night is gone from the landing folder (its rows "
            "are kept), naming it and the night it was first not seen.",
        ),
    ]


def connect_for_ingest(warehouse: Warehouse, landing: LandingZone) -> duckdb.DuckDBPyConnection:
    """A locked-down warehouse connection; a file held by another process is a transient error, retried."""
    try:
        return warehouse.connect(readable=landing.root)
    except duckdb.IOException as error:
        if "lock" not in str(error).lower():
            raise
        raise dg.RetryRequested(max_retries=TRANSIENT_RETRIES, seconds_to_wait=TRANSIENT_WAIT_SECONDS) from error


def previously_quarantined(context: dg.AssetExecutionContext) -> int | None:
    """rows_quarantined recorded by this asset's previous materialisation, if any."""
    event = context.instance.get_latest_materialization_event(context.asset_key)
    materialization = event.asset_materialization if event else None
    value = materialization.metadata.get("rows_quarantined") if materialization else None
    return int(value.value) if value is not None else None


@dataclasses.dataclass(frozen=True)
class LoadFailure:
    """Tonight's load of a source failed and was rolled back: the error (one line) and its last good load."""

    error: str
    last_good_load: datetime | None

    def night(self) -> str:
        return f"{self.last_good_load:%Y-%m-%d %H:%M} UTC" if self.last_good_load else "no night (it never loaded)"


def last_load(context: dg.AssetExecutionContext) -> datetime | None:
    """When this asset last loaded its source, naive UTC: its previous materialisation, or (when that night's load
    failed too) the last good load it named."""
    event = context.instance.get_latest_materialization_event(context.asset_key)
    if event is None or event.asset_materialization is None:
        return None
    named = event.asset_materialization.metadata.get("last_good_load")
    if named is not None:
        return datetime.fromisoformat(named.value) if named.value else None
    return datetime.fromtimestamp(event.timestamp, UTC).replace(tzinfo=None)


def report_result(
    context: dg.AssetExecutionContext,
    report: IngestReport,
    failure: LoadFailure | None = None,
    delivered: dg.AssetCheckResult | None = None,
) -> dg.MaterializeResult:
    """Turn an ingest report into metadata and check results: counts and rule names only. After a failed load the
    report is what raw keeps (``kept_report``) and ``source_loaded`` warns, naming the error and the night.
    ``delivered`` is the freshness check's result; only the run's selected checks are reported."""
    previous = previously_quarantined(context)
    for example in report.examples:
        context.log.warning(f"quarantined: {example}")
    for source_file, original in report.duplicates:
        context.log.warning(f"duplicate: {source_file} has the same bytes as {original}; it loaded 0 rows")
    for flagged in report.flags:
        context.log.warning(f"flagged: {flagged}")
    for source_file, since in report.missing:
        context.log.warning(f"missing: {source_file} is gone from the landing folder since {since}; its rows are kept")
    for source_file in report.retracted:
        context.log.warning(f"retracted: {source_file} was retracted (raw.retractions); it loaded 0 rows")
    for source_file, rows in report.released:
        context.log.info(
            f"released: {rows} row(s) of {source_file}, gone from the landing folder, that a dbt test held are back in "
            "raw: tonight's build tests them again"
        )
    missing = dg.MetadataValue.json({source_file: since for source_file, since in report.missing})
    by_rule = dict(sorted(report.by_rule.items()))
    metadata = {
        "files": report.files,
        "rows_in": report.rows_in,
        "rows_staged": report.rows_staged,
        "rows_quarantined": report.rows_quarantined,
        "duplicate_files": report.duplicate_files,
        "quarantined_by_rule": dg.MetadataValue.json(by_rule),
        "flagged_files": dg.MetadataValue.json(report.flags),
        "missing_files": len(report.missing),
    }
    loaded: dict[str, Any] = {"load_failed": failure is not None}
    if failure is not None:
        context.log.warning(
            f"stale: {report.source} did not load ({failure.error}); raw keeps its rows of {failure.night()}"
        )
        loaded["load_error"] = failure.error
        loaded["last_good_load"] = failure.last_good_load.isoformat(sep=" ") if failure.last_good_load else ""
    metadata.update(loaded)
    results = [
        dg.AssetCheckResult(
            check_name="rows_conserved",
            passed=report.conserved,
            metadata={
                "rows_in": report.rows_in,
                "rows_staged": report.rows_staged,
                "rows_quarantined": report.rows_quarantined,
            },
        ),
        dg.AssetCheckResult(
            check_name="no_quarantined_rows",
            passed=report.rows_quarantined == 0,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "rows_quarantined": report.rows_quarantined,
                "quarantined_by_rule": dg.MetadataValue.json(by_rule),
            },
        ),
        dg.AssetCheckResult(
            check_name="quarantine_not_growing",
            passed=previous is None or report.rows_quarantined <= previous,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "rows_quarantined": report.rows_quarantined,
                "previously_quarantined": -1 if previous is None else previous,
            },
        ),
        dg.AssetCheckResult(
            check_name="source_loaded",
            passed=failure is None,
            severity=dg.AssetCheckSeverity.WARN,
            description=None
            if failure is None
            else f"figures from {report.source} are as of {failure.night()}: {failure.error}",
            metadata=loaded,
        ),
        dg.AssetCheckResult(
            check_name="no_missing_files",
            passed=not report.missing,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"missing_files": len(report.missing), "missing_since": missing},
        ),
        *([delivered] if delivered is not None else []),
    ]
    selected = {key.name for key in context.selected_asset_check_keys}
    return dg.MaterializeResult(
        metadata=metadata, check_results=[result for result in results if result.check_name in selected]
    )


@dg.multi_asset(
    specs=[
        dg.AssetSpec(["raw", table], group_name=GROUP, kinds={"duckdb"}, description=description, owners=_owners(table))
        for table, description in TABLES.items()
    ],
)
def contract_tables(landing: LandingZone, warehouse: Warehouse):
    con = connect_for_ingest(warehouse, landing)
    try:
        counts = load_contract_tables(con)
    finally:
        con.close()
    yield dg.MaterializeResult(asset_key=["raw", "contract_enumerations"], metadata={"rows": counts["enumerations"]})
    yield dg.MaterializeResult(asset_key=["raw", "contract_parameters"], metadata={"rows": counts["parameters"]})


IGNORED_SHOWN = 20  # ignored files named in the check's metadata; raw.ignored_files holds them all


@dg.asset(
    key=["raw", "ignored_files"],
    group_name=GROUP,
    owners=_owners("ignored_files"),
    kinds={"duckdb"},
    description=BOOKKEEPING_TABLES["ignored_files"],
    check_specs=[
        dg.AssetCheckSpec(
            "no_ignored_files",
            asset=dg.AssetKey(["raw", "ignored_files"]),
            description="Warns when a landing file matches no source's pattern.",
        )
    ],
)
def ignored_files(
    context: dg.AssetExecutionContext, landing: LandingZone, warehouse: Warehouse
) -> dg.MaterializeResult:
    """Record every landing file that no source reads, and warn about them by name."""
    con = connect_for_ingest(warehouse, landing)
    try:
        names = record_ignored(con, landing.root, unread_files(landing.root))
    finally:
        con.close()
    for name in names[:IGNORED_SHOWN]:
        context.log.warning(f"ignored: {name} matches no source's pattern (see docs/inputs.md)")
    shown = dg.MetadataValue.json(names[:IGNORED_SHOWN])
    return dg.MaterializeResult(
        metadata={"ignored_files": len(names), "first_ignored": shown},
        check_results=[
            dg.AssetCheckResult(
                check_name="no_ignored_files",
                passed=not names,
                severity=dg.AssetCheckSeverity.WARN,
                metadata={"ignored_files": len(names), "first_ignored": shown},
            )
        ],
    )


def config_class(source: Source) -> type[dg.Config]:
    """The source's launch options as a Dagster config class: the same field names, types, defaults and doc."""
    hints = typing.get_type_hints(source.options)
    fields = dataclasses.fields(source.options)
    namespace = {
        "__annotations__": {f.name: hints[f.name] for f in fields},
        "__doc__": source.options.__doc__,
        "__module__": __name__,
        **{f.name: f.default for f in fields},
    }
    return type("".join(part.title() for part in source.name.split("_")) + "Config", (dg.Config,), namespace)


def _load(
    context: dg.AssetExecutionContext,
    landing: LandingZone,
    warehouse: Warehouse,
    source: Source,
    options: Any,
    freshness: Freshness,
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    """Load one source; a load that raises is rolled back and recorded (``raw.source_failures``), and the asset
    materialises with what raw keeps, so the rest of the night goes on. A lost warehouse connection still fails.
    Then its freshness check, on the same connection. A run that selects the asset's freshness check alone loads
    nothing and evaluates it."""
    if dg.AssetKey(["raw", source.name]) not in context.selected_asset_keys:
        yield _delivered_alone(context, warehouse, freshness)
        return
    fresh = DELIVERED_ON_TIME in {key.name for key in context.selected_asset_check_keys}
    con = connect_for_ingest(warehouse, landing)
    try:
        failure = None
        try:
            report = source.load(con, landing.root, load_contract(), options)
        except Exception as error:
            message = one_line(error)
            failure = LoadFailure(message, record_failure(con, source.name, message, last_load(context)))
            report = kept_report(con, source.name)
        else:
            clear_failure(con, source.name)
            record_arrivals(con, source.name)
        result = report_result(context, report, failure, freshness.result(con) if fresh else None)
    finally:
        con.close()
    yield result


def _delivered_alone(
    context: dg.AssetExecutionContext, warehouse: Warehouse, freshness: Freshness
) -> dg.AssetCheckResult:
    """The freshness check without a load (only it selected); the other checks describe a load."""
    load_checks = sorted(key.name for key in context.selected_asset_check_keys if key.name != DELIVERED_ON_TIME)
    if load_checks:
        raise dg.Failure(
            f"{', '.join(load_checks)} of raw/{freshness.source} describe(s) its load: materialise raw/"
            f"{freshness.source} with them (only {DELIVERED_ON_TIME} can run alone)"
        )
    return freshness.result_on(warehouse)


def source_asset(source: Source) -> dg.AssetsDefinition:
    """The ingest asset of one registered source, with its checks and its freshness check."""
    freshness = Freshness.of(source.name)
    decorate = dg.multi_asset(
        name=f"raw__{source.name}",
        specs=[
            dg.AssetSpec(
                ["raw", source.name],
                group_name=GROUP,
                kinds={"duckdb"},
                description=source.summary(),
                owners=_owners(source.name),
            )
        ],
        check_specs=[*_check_specs(source.name), *([freshness.spec()] if freshness.in_load_step else [])],
        can_subset=True,
    )
    if source.options is None:

        @decorate
        def _ingest(
            context: dg.AssetExecutionContext, landing: LandingZone, warehouse: Warehouse
        ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
            yield from _load(context, landing, warehouse, source, None, freshness)

        return _ingest
    options = source.options
    config_type = config_class(source)

    @decorate
    def _configured(
        context: dg.AssetExecutionContext, landing: LandingZone, warehouse: Warehouse, config: config_type
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        yield from _load(
            context,
            landing,
            warehouse,
            source,
            options(**{f.name: getattr(config, f.name) for f in dataclasses.fields(options)}),
            freshness,
        )

    return _configured


# The bookkeeping tables every source writes besides its own (the ledger, the quarantine...) and the extent table a
# source writes beside its raw table (``Source.extent``): written by the assets above, never materialised on their
# own; declared so that the graph describes them and names their owners.
bookkeeping_specs: list[dg.AssetSpec] = [
    dg.AssetSpec(["raw", table], group_name=GROUP, kinds={"duckdb"}, description=description, owners=_owners(table))
    for table, description in BOOKKEEPING_TABLES.items()
    if table != "ignored_files"
] + [
    dg.AssetSpec(
        ["raw", source.extent_table],
        group_name=GROUP,
        kinds={"duckdb"},
        description=source.extent_summary(),
        owners=_owners(source.name),
    )
    for source in SOURCES.values()
    if source.extent_table is not None
]
# So are the files' arrivals, in ``ops``: staging reads them (dbt source ``ops.file_arrivals``) for the order of
# delivery.
bookkeeping_specs.append(
    dg.AssetSpec(
        [arrivals.SCHEMA, arrivals.TABLE],
        group_name=GROUP,
        kinds={"duckdb"},
        description=arrivals.DESCRIPTION,
        owners=_owners(arrivals.TABLE),
    )
)
source_assets: list[dg.AssetsDefinition] = [source_asset(source) for source in SOURCES.values()]
ASSETS_BY_TABLE = {asset.key.path[-1]: asset for asset in source_assets}
ingest_assets: list[dg.AssetsDefinition] = [contract_tables, *source_assets, ignored_files]
