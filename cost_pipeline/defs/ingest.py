"""One ingest asset per landing source, keyed as the dbt source it feeds (["raw", <table>]).

Validation results are asset checks: ``rows_conserved`` (blocking: rows in must equal rows staged plus
rows quarantined) and ``no_quarantined_rows`` (a warning that names files, lines and rules, never values).
"""

import dagster as dg
import duckdb

from cost_pipeline.contract import load_contract
from cost_pipeline.defs.resources import LandingZone, Warehouse
from cost_pipeline.ingest.contract_tables import load_contract_tables
from cost_pipeline.ingest.sources import SacctOptions, load_named
from cost_pipeline.ingest.warehouse import IngestReport

GROUP = "ingest"
# The warehouse file is held by another process (a BI reader, a manual query): wait and try again.
TRANSIENT_RETRIES = 5
TRANSIENT_WAIT_SECONDS = 2


def _check_specs(table: str) -> list[dg.AssetCheckSpec]:
    key = dg.AssetKey(["raw", table])
    return [
        dg.AssetCheckSpec("rows_conserved", asset=key, blocking=True,
                          description="Rows in = rows staged + rows quarantined, for every file."),
        dg.AssetCheckSpec("no_quarantined_rows", asset=key,
                          description="Warns when any row broke the definitions contract (see raw.quarantine)."),
        dg.AssetCheckSpec("quarantine_not_growing", asset=key,
                          description="Fails when more rows are quarantined than at the previous materialisation."),
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


def report_result(context: dg.AssetExecutionContext, report: IngestReport) -> dg.MaterializeResult:
    """Turn an ingest report into metadata and check results: counts and rule names only."""
    previous = previously_quarantined(context)
    for example in report.examples:
        context.log.warning(f"quarantined: {example}")
    for source_file, original in report.duplicates:
        context.log.warning(f"duplicate: {source_file} has the same bytes as {original}; it loaded 0 rows")
    by_rule = dict(sorted(report.by_rule.items()))
    metadata = {
        "files": report.files,
        "rows_in": report.rows_in,
        "rows_staged": report.rows_staged,
        "rows_quarantined": report.rows_quarantined,
        "duplicate_files": report.duplicate_files,
        "quarantined_by_rule": dg.MetadataValue.json(by_rule),
    }
    return dg.MaterializeResult(
        metadata=metadata,
        check_results=[
            dg.AssetCheckResult(
                check_name="rows_conserved", passed=report.conserved,
                metadata={"rows_in": report.rows_in, "rows_staged": report.rows_staged,
                          "rows_quarantined": report.rows_quarantined}),
            dg.AssetCheckResult(
                check_name="no_quarantined_rows", passed=report.rows_quarantined == 0,
                severity=dg.AssetCheckSeverity.WARN,
                metadata={"rows_quarantined": report.rows_quarantined,
                          "quarantined_by_rule": dg.MetadataValue.json(by_rule)}),
            dg.AssetCheckResult(
                check_name="quarantine_not_growing",
                passed=previous is None or report.rows_quarantined <= previous,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={"rows_quarantined": report.rows_quarantined,
                          "previously_quarantined": -1 if previous is None else previous}),
        ],
    )


@dg.multi_asset(
    specs=[
        dg.AssetSpec(["raw", "contract_enumerations"], group_name=GROUP, kinds={"duckdb"},
                     description="Every shipped definitions-contract version's enumerations (R3)."),
        dg.AssetSpec(["raw", "contract_parameters"], group_name=GROUP, kinds={"duckdb"},
                     description="Every shipped definitions-contract version's numeric parameters (R3)."),
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


class SchedulerIngestConfig(dg.Config):
    """How the sacct exports were written: ``|`` with a header line unless told otherwise."""

    sacct_delimiter: str = "|"
    sacct_fields: list[str] | None = None


def _load(context: dg.AssetExecutionContext, landing: LandingZone, warehouse: Warehouse, name: str,
          options: SacctOptions = SacctOptions(), focus_tag_key: str = "batch_id") -> dg.MaterializeResult:
    con = connect_for_ingest(warehouse, landing)
    try:
        report = load_named(con, landing.root, name, load_contract(), options, focus_tag_key)
    finally:
        con.close()
    return report_result(context, report)


def _source_asset(name: str, description: str) -> dg.AssetsDefinition:
    @dg.asset(name=name, key_prefix=["raw"], group_name=GROUP, kinds={"duckdb"}, description=description,
              check_specs=_check_specs(name))
    def _ingest(context: dg.AssetExecutionContext, landing: LandingZone, warehouse: Warehouse) -> dg.MaterializeResult:
        return _load(context, landing, warehouse, name)

    return _ingest


@dg.asset(key=["raw", "scheduler_jobs"], group_name=GROUP, kinds={"duckdb"}, check_specs=_check_specs("scheduler_jobs"),
          description="Slurm sacct --parsable2 exports (I1): scheduler/*.sacct|txt|psv.")
def scheduler_jobs(context: dg.AssetExecutionContext, landing: LandingZone, warehouse: Warehouse,
                   config: SchedulerIngestConfig) -> dg.MaterializeResult:
    fields = tuple(config.sacct_fields) if config.sacct_fields else None
    return _load(context, landing, warehouse, "scheduler_jobs", SacctOptions(config.sacct_delimiter, fields))


class BillingIngestConfig(dg.Config):
    """Which key of the FOCUS ``Tags`` JSON object carries the batch key."""

    batch_tag_key: str = "batch_id"


@dg.asset(key=["raw", "billing_focus"], group_name=GROUP, kinds={"duckdb"}, check_specs=_check_specs("billing_focus"),
          description="FOCUS 1.x billing exports (I4): billing/*.csv, as providers write them.")
def billing_focus(context: dg.AssetExecutionContext, landing: LandingZone, warehouse: Warehouse,
                  config: BillingIngestConfig) -> dg.MaterializeResult:
    return _load(context, landing, warehouse, "billing_focus", focus_tag_key=config.batch_tag_key)


_DESCRIPTIONS = {
    "batch_registry": "The batch registry and plan (I10): registry/batches*.csv.",
    "scheduler_events": "Kubernetes-style job events (I1): scheduler/*.jsonl.",
    "training_steps": "Training-step records (I3): steps/*.jsonl.",
    "ledger_purchases": "Procurement ledger (I5): ledger/purchases*.csv.",
    "ledger_facility": "Monthly facility costs (I5): ledger/facility*.csv.",
    "serving_requests": "Inference requests (I9), native or LiteLLM spend-log shape: requests/*.jsonl|parquet.",
    "serving_replicas": "Serving replica allocations (I9): serving/replicas*.csv.",
    "serving_monthly_costs": "Monthly serving costs besides GPUs (I9): serving/monthly_costs*.csv.",
    "task_outcomes": "Task outcomes and human correction time (I9): tasks/outcomes*.csv.",
    "storage_inventory": "S3 Inventory files (I6): storage/**/*.csv|csv.gz (header-less with manifest.json, or with "
                         "a header) and *.parquet, loaded and validated inside DuckDB.",
    "storage_prefix_rules": "Bucket prefix rules (I6): storage/prefix_rules*.csv, purpose, owner, batch, retention.",
    "storage_prices": "Storage prices per class and GB-month (I6): storage/storage_prices*.csv.",

    "batch_rounds": "Trial rounds of a batch and the evidence each produced (I10, R18): registry/rounds*.csv.",
    "timesheets": "Harvest detailed time reports (I7): timesheets/*.csv; cost rates are confidential (R20).",
    "service_invoices": "External-service invoices and accruals (I8): services/*.csv.",
}
source_assets = [scheduler_jobs, billing_focus,
                 *(_source_asset(name, text) for name, text in _DESCRIPTIONS.items())]

device_samples = _source_asset(
    "device_samples", "DCGM device samples (I2): telemetry/*.csv|parquet, loaded and validated inside DuckDB.")


ingest_assets: list[dg.AssetsDefinition] = [contract_tables, *source_assets, device_samples]
