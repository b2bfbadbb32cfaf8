"""The month's deliverables as monthly-partitioned assets, their job, and the sensor that refreshes them nightly.

Costs are closed by month, so the files finance takes each month are partitioned by month
(``monthly_partitions``: from the contract's ``operations.first_month`` to the current month, UTC, which is the open
month). One partition run writes that month's folder beside the warehouse (``cost_pipeline.monthly``): the GL journal
(``monthly/gl_journal``), the FOCUS 1.2 export (``monthly/focus_export``), one chargeback statement per team
(``monthly/chargeback_statements``) and the month's rows of every month-keyed mart (``monthly/cost_marts``). They
read the marts, which stay one full nightly rebuild; a partition run never changes a table.

The nightly job stays unpartitioned (a run is one partition of every asset or none). The ``monthly_after_nightly``
sensor watches it: when a night succeeds it requests the partition of the open month, and of the previous month while
it is not closed (``cost-pipeline close``); closed months keep the files of the run that last wrote them.
"""

import json
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg

from cost_pipeline import duckdb_session
from cost_pipeline.calendar_months import previous_month
from cost_pipeline.contract import load_contract
from cost_pipeline.dagster_home import published_as_of
from cost_pipeline.dbt_setup import dbt_project
from cost_pipeline.defs.partitions import MONTH_FORMAT, monthly_partitions
from cost_pipeline.defs.resources import Warehouse
from cost_pipeline.defs.schedules import nightly_cost_refresh_job
from cost_pipeline.journal import latest_closed
from cost_pipeline.model_builds import TABLE, unbuilt
from cost_pipeline.monthly import MARTS_FOLDER, MONTH_COLUMN, MonthFiles, write_month

GROUP = "monthly"

JOURNAL = dg.AssetKey(["monthly", "gl_journal"])
FOCUS = dg.AssetKey(["monthly", "focus_export"])
STATEMENTS = dg.AssetKey(["monthly", "chargeback_statements"])
COST_MARTS = dg.AssetKey(["monthly", "cost_marts"])
_OWNERS = load_contract().owners(GROUP, kind="layers")
_FOLDER = "<warehouse stem>.monthly/<YYYY-MM>/"


def month_keyed_marts() -> list[list[str]]:
    """The dbt marts whose yml declares a ``month`` column of type date, as asset key paths (the manifest's; the
    partition run writes the warehouse's tables with a ``month`` date column, ``cost_pipeline.monthly.month_marts``)."""
    manifest = json.loads(dbt_project.manifest_path.read_text(encoding="utf-8"))
    return sorted(
        [node["config"]["schema"], node["name"]]
        for node in manifest["nodes"].values()
        if node["resource_type"] == "model"
        and node["config"]["schema"] == "marts"
        and (node["columns"].get(MONTH_COLUMN, {}).get("data_type") or "").lower() == "date"
    )


_KINDS = {JOURNAL: {"csv"}, FOCUS: {"csv"}, STATEMENTS: {"html"}, COST_MARTS: {"parquet"}}


def _spec(key: dg.AssetKey, deps: list[list[str]], description: str) -> dg.AssetSpec:
    return dg.AssetSpec(
        key=key,
        group_name=GROUP,
        owners=_OWNERS,
        kinds=_KINDS[key],
        deps=[dg.AssetKey(dep) for dep in deps],
        description=description,
    )


@dg.multi_asset(
    name="monthly_deliverables",
    specs=[
        _spec(
            JOURNAL,
            [["marts", "fct_gl_journal"]],
            f"The month's general-ledger journal, {_FOLDER}journal.csv, as `cost-pipeline journal --month` writes "
            "it: a closed month's frozen lines (`cost-pipeline close`), an open month's as tonight states them. A "
            "difference of a closed month held while its cost is unpriced (lines flagged is_unpriced) is logged as a "
            "warning and listed in the `held` metadata, the note the command prints.",
        ),
        _spec(
            FOCUS,
            [["marts", "fct_resource_book"], ["intermediate", "int_focus_charges_attributed"]],
            f"The month's resource book as FOCUS 1.2, {_FOLDER}focus.csv, as `cost-pipeline export --focus --month` "
            "writes it.",
        ),
        _spec(
            STATEMENTS,
            [["marts", "fct_cost_lines"], ["marts", "dim_batches"]],
            f"One chargeback statement per team with cost in the month, {_FOLDER}statements/<team>.html, as "
            "`cost-pipeline report --team --month` writes it.",
        ),
        _spec(
            COST_MARTS,
            month_keyed_marts(),
            f"The month's rows of every mart with a `month` column, {_FOLDER}{MARTS_FOLDER}/<mart>.parquet, sorted, "
            "as tonight's marts state them (a closed month's too; its journal stays frozen), each row ending with "
            "`as_of`, the night of those marts.",
        ),
    ],
    partitions_def=monthly_partitions,
    can_subset=False,
)
def monthly_deliverables(context: dg.AssetExecutionContext, warehouse: Warehouse):
    month = datetime.strptime(context.partition_key, MONTH_FORMAT).date()
    as_of = published_as_of(context.instance)
    if as_of is None:
        raise dg.Failure(f"{warehouse.file}: no night has published its marts yet; a month's files are a night's marts")
    con = duckdb_session.connect(str(warehouse.file), read_only=True)
    try:
        left = unbuilt(con, "marts")
        if left:
            raise dg.Failure(
                f"{warehouse.file}: the last dbt build did not rebuild {', '.join(sorted(left))} "
                f"({TABLE}); a month's files are one night's marts: they wait for a night that rebuilds every mart"
            )
        files = write_month(con, warehouse.file, month, as_of)
    finally:
        con.close()
    context.log.info(
        f"wrote {files.folder}: {files.journal_lines} journal lines, {files.focus_rows} FOCUS rows, "
        f"{len(files.statements)} statement(s)"
    )
    for note in files.journal_held:  # what `cost-pipeline journal --month` prints on stderr
        context.log.warning(note)
    yield from _results(files)


def _results(files: MonthFiles):
    yield dg.MaterializeResult(
        asset_key=JOURNAL,
        metadata={
            "path": dg.MetadataValue.path(str(files.journal)),
            "lines": files.journal_lines,
            "debit_cents": files.journal_debit_cents,
            "credit_cents": files.journal_credit_cents,
            "closed": files.journal_closed,
            "held": dg.MetadataValue.json(list(files.journal_held)),
        },
    )
    yield dg.MaterializeResult(
        asset_key=FOCUS,
        metadata={
            "path": dg.MetadataValue.path(str(files.focus)),
            "rows": files.focus_rows,
            "billed_cost_cents": files.focus_billed_cents,
        },
    )
    yield dg.MaterializeResult(
        asset_key=STATEMENTS,
        metadata={
            "folder": dg.MetadataValue.path(str(files.folder / "statements")),
            "teams": len(files.statements),
            "paths": dg.MetadataValue.json({team: str(path) for team, path in files.statements.items()}),
            "total_cents": dg.MetadataValue.json(files.statement_cents),
        },
    )
    yield dg.MaterializeResult(
        asset_key=COST_MARTS,
        metadata={
            "folder": dg.MetadataValue.path(str(files.folder / MARTS_FOLDER)),
            "marts": len(files.marts),
            "rows": dg.MetadataValue.json(files.marts),
            "dagster/row_count": sum(files.marts.values()),
        },
    )


monthly_deliverables_job = dg.define_asset_job(
    "monthly_deliverables_job",
    selection=dg.AssetSelection.groups(GROUP),  # partitioned as its assets are (monthly_partitions)
    description="Write one month's journal, FOCUS export, chargeback statements and month-keyed marts beside the "
    "warehouse.",
)


def months_to_refresh(warehouse: Path, today: date) -> list[str]:
    """The partition keys a night on ``today`` refreshes: the previous month while it is not closed, then the open
    month (``today``'s); none before the first partition."""
    con = duckdb_session.connect(str(warehouse), read_only=True)
    try:
        closed = latest_closed(con)
    finally:
        con.close()
    first = load_contract().first_month
    current = today.replace(day=1)
    months = [m for m in (previous_month(current), current) if m >= first and (closed is None or m > closed)]
    return [f"{m:{MONTH_FORMAT}}" for m in months]


def _night_of(context: dg.RunStatusSensorContext) -> date:
    """The day of the night: the schedule's tick time, else when the run ended, in UTC."""
    scheduled = context.dagster_run.tags.get("dagster/scheduled_execution_time")
    if scheduled:
        return datetime.fromisoformat(scheduled).astimezone(UTC).date()
    record = context.instance.get_run_record_by_id(context.dagster_run.run_id)
    ended = record.end_time if record is not None and record.end_time else datetime.now(UTC).timestamp()
    return datetime.fromtimestamp(ended, UTC).date()


@dg.run_status_sensor(
    name="monthly_after_nightly",
    description="After a night succeeds: the monthly partitions of the open month, and of the previous month while "
    "it is not closed.",
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[nightly_cost_refresh_job],
    request_job=monthly_deliverables_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def monthly_after_nightly(context: dg.RunStatusSensorContext):
    # The warehouse the runs write (COST_WAREHOUSE, as the warehouse resource reads it), read without the run lock:
    # a tick only reads which months are closed. If a writer holds the file the tick errors (shown in the UI) and
    # requests nothing for this night; the next night refreshes the same months.
    warehouse = Path(dg.EnvVar("COST_WAREHOUSE").get_value()).resolve()
    night = context.dagster_run.run_id
    return [
        dg.RunRequest(run_key=f"{night}:{key}", partition_key=key, tags={"cost_pipeline/night": night})
        for key in months_to_refresh(warehouse, _night_of(context))
    ]


monthly_assets = [monthly_deliverables]
