"""Publishing the marts for BI readers: the finance and engineering files, after the marts are rebuilt (R20).

The asset depends on every dbt model of schema ``marts``, so in the nightly job it runs after dbt and only when dbt
succeeded. When a run's dbt build fails (a model errors, an error-severity test fails on built rows; the nightly
job's run or a landing sensor's), the ``publish_after_failed_build`` sensor runs it alone (the CLI does the same):
the marts the build rebuilt are published, and each mart it did not rebuild keeps its last published copy, named in
the files' ``main.stale`` (``cost_pipeline.model_builds``, ``cost_pipeline.publish``). Its metadata names the files,
counts tables and columns and lists the marts kept; it never holds a value.
"""

from collections.abc import Iterable
from contextlib import closing
from pathlib import Path

import dagster as dg
import duckdb

from cost_pipeline import duckdb_session
from cost_pipeline.contract import load_contract
from cost_pipeline.defs.dbt import cost_models
from cost_pipeline.defs.resources import Warehouse
from cost_pipeline.model_builds import recorded_by
from cost_pipeline.publish import ENGINEERING, FINANCE, MARTS, STALE, publish

GROUP = "publish"
# The warehouse file is held by another writer for a moment (a manual session): wait and try again.
TRANSIENT_RETRIES = 5
TRANSIENT_WAIT_SECONDS = 2

mart_keys = sorted((key for key in cost_models.keys if key.path[0] == MARTS), key=lambda key: key.to_user_string())


@dg.asset(
    key=["published", "marts"],
    group_name=GROUP,
    owners=load_contract().owners("published", kind="layers"),
    kinds={"duckdb"},
    deps=mart_keys,
    description="The marts copied into <warehouse>.finance.duckdb (every column) and <warehouse>.engineering.duckdb "
    "(without the contract's confidential columns), and as one Parquet file per mart into <warehouse>.finance/ and "
    "<warehouse>.engineering/, each swapped in atomically for BI readers (DuckDB 1.1+ storage, column comments).",
)
def published_marts(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    try:
        publication = publish(warehouse.file, memory_limit=warehouse.memory_limit)
    except duckdb.IOException as error:
        if "lock" not in str(error).lower():
            raise
        raise dg.RetryRequested(max_retries=TRANSIENT_RETRIES, seconds_to_wait=TRANSIENT_WAIT_SECONDS) from error
    omitted = list(publication.omitted)
    context.log.info(
        f"published {publication.tables[FINANCE]} marts tables for finance and "
        f"{publication.tables[ENGINEERING]} for engineering; engineering omits {omitted}"
    )
    stale = {
        mart: {"reason": reason, "as_of": night.isoformat() if night else None}
        for mart, (reason, night) in publication.stale.items()
    }
    if stale:
        context.log.warning(
            f"{len(stale)} mart(s) were not rebuilt by the last dbt build; the files keep their last published copy "
            f"(main.{STALE}): "
            + "; ".join(f"{mart}: {kept['reason']}, as of {kept['as_of']}" for mart, kept in stale.items())
        )
    return dg.MaterializeResult(
        metadata={
            "finance_file": dg.MetadataValue.path(str(publication.files[FINANCE])),
            "finance_tables": publication.tables[FINANCE],
            "engineering_file": dg.MetadataValue.path(str(publication.files[ENGINEERING])),
            "engineering_tables": publication.tables[ENGINEERING],
            "engineering_omitted_columns": dg.MetadataValue.json(omitted),
            "input_files": publication.input_files,
            "finance_parquet": dg.MetadataValue.path(str(publication.parquet[FINANCE])),
            "engineering_parquet": dg.MetadataValue.path(str(publication.parquet[ENGINEERING])),
            "as_of": publication.as_of.isoformat(),
            "stale_marts": dg.MetadataValue.json(stale),
        }
    )


publish_job = dg.define_asset_job(
    "publish_after_failed_build",
    selection=[published_marts.key],
    description="Publish after a failed dbt build: the marts it rebuilt, and the last published copy of the others.",
)


def publishes_after(failed_steps: Iterable[str], warehouse: Path, run_id: str) -> bool:
    """Whether a failed night (run ``run_id``) is published still: its dbt step failed, after recording its models'
    outcomes in ``warehouse`` (without them, no mart of the warehouse can be told rebuilt or not)."""
    if cost_models.op.name not in set(failed_steps):
        return False
    with closing(duckdb_session.connect(str(warehouse), read_only=True)) as con:
        return recorded_by(con, run_id)


@dg.run_failure_sensor(
    name="publish_after_failed_build",
    description="When a run's dbt build fails (the nightly job's, a landing sensor's): publish the marts it rebuilt; "
    "the others keep their last copy.",
    request_job=publish_job,  # no monitored_jobs: every job of this code location; one without a dbt step is skipped
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def publish_after_failed_build(context: dg.RunFailureSensorContext):
    # The warehouse the runs write (COST_WAREHOUSE, as the warehouse resource reads it), read without the run lock.
    warehouse = Path(dg.EnvVar("COST_WAREHOUSE").get_value()).resolve()
    night = context.dagster_run.run_id
    failed = [event.step_key for event in context.get_step_failure_events() if event.step_key]
    selection = context.dagster_run.asset_selection  # None or empty: the whole job (the nightly one publishes)
    if selection and published_marts.key not in selection:
        return dg.SkipReason(f"run {night} did not select {published_marts.key.to_user_string()}: it publishes nothing")
    if not publishes_after(failed, warehouse, night):
        return dg.SkipReason(f"run {night} did not fail in its dbt build: nothing new to publish")
    return dg.RunRequest(run_key=night, tags={"cost_pipeline/night": night})


publish_assets: list[dg.AssetsDefinition] = [published_marts]
