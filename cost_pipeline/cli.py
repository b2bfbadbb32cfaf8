"""cost-pipeline: run the nightly job on the demo scenario or on real exports, from a terminal; start the Dagster UI
on the same run history; keep the generated docs current; export the general-ledger journal and close a month;
write a batch's or a team's HTML or PDF statement; export the resource book as FOCUS 1.2; write a month's journal,
FOCUS export and team statements as its monthly partition.
Exit codes (docs/operations.md): 0 done, 1 the run failed, 2 wrong arguments or config (an unknown batch or team),
3 the warehouse is busy, 4 every row of a source was quarantined, 5 the warehouse is unusable, 6 retract: no such
file, 7 the landing folder holds no files (--allow-empty runs anyway), 8 a source's load failed: its figures are
stale, 9 the journal cannot be printed or the month cannot be closed, 10 the FOCUS export cannot be written,
11 report --pdf: WeasyPrint or Pango is missing, 12 rows that passed the contract failed a dbt test: quarantined,
the night built without them."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import TextIO

import duckdb

from cost_pipeline import duckdb_session
from cost_pipeline.dagster_home import dagster_home, last_good_night, warehouse_instance
from cost_pipeline.demo import write_demo_landing
from cost_pipeline.progress import LOGGER, NightProgress
from cost_pipeline.run_config import RunConfigError, check_run_config, read_run_config
from cost_pipeline.run_lock import WarehouseBusy, warehouse_run_lock
from cost_pipeline.source_summary import SummaryFindings, as_of, print_source_summary, source_failures
from cost_pipeline.warehouse_file import UNUSABLE_EXIT, WarehouseUnusable, check_warehouse

EMPTY_LANDING_EXIT = 7  # docs/operations.md lists every exit code
STALE_EXIT = 8  # the marts were built and published, but a source's load failed: its figures are a past night's
HELD_EXIT = 12  # the marts were built and published without landing rows that failed a dbt test (a contract defect)

BATCH_COLUMNS = (
    ("batch_id", "batch", 13),
    ("jobs", "jobs", 5),
    ("requested_gpu_hours", "requested h", 12),
    ("occupied_gpu_hours", "occupied h", 11),
    ("effective_compute_gpu_hours", "effective h", 12),
    ("comm_wait_gpu_hours", "comm wait h", 12),
    ("idle_gpu_hours", "idle h", 9),
    ("unobserved_gpu_hours", "unobserved h", 13),
    ("failed_gpu_hours", "failed h", 9),
    ("rerun_gpu_hours", "rerun h", 8),
    ("steps_run", "steps", 6),
    ("steps_counted", "counted", 8),
    ("compute_cost", "compute cost", 13),
    ("cost_per_counted_step", "per step", 10),
    ("cost_per_effective_gpu_hour", "per eff. h", 11),
)

FULL_COST_COLUMNS = (
    ("batch_id", "batch", 13),
    ("compute_cost", "compute", 11),
    ("storage_cost", "storage", 9),
    ("labour_cost", "labour", 10),
    ("services_cost", "services", 10),
    ("total_cost", "total", 11),
    ("total_cost_low", "low", 11),
    ("total_cost_high", "high", 11),
    ("rerun_cost", "of which rerun", 15),
    ("billed_cost", "billed", 10),
    ("measured_cost", "measured", 10),
    ("assumed_cost", "assumed", 9),
    ("pending_cost", "pending", 9),
)
BUDGET_COLUMNS = (
    ("batch_id", "batch", 13),
    ("budget_cost", "budget", 10),
    ("actual_cost", "actual", 10),
    ("variance_pct", "variance %", 11),
    ("over_boundary", "over bound", 11),
    ("rounds_run", "rounds", 7),
    ("stop_signal", "stop", 6),
    ("exploration_cost", "exploration", 12),
    ("unforeseeable_failure_cost", "unforeseeable", 14),
    ("avoidable_rework_cost", "avoidable", 10),
    ("planned_work_cost", "planned", 10),
)
SERVICE_COLUMNS = (
    ("month", "month", 10),
    ("model", "model", 16),
    ("gpu_hours", "GPU h", 10),
    ("serving_cost", "spend C", 11),
    ("requests_completed", "completed N", 12),
    ("cost_per_request", "C / N", 11),
)
TASK_COLUMNS = (
    ("model", "routed to", 16),
    ("tasks", "tasks", 6),
    ("success_rate", "success", 8),
    ("cost_per_call", "per call", 11),
    ("cost_per_successful_task", "per success", 12),
)


def nightly_job():
    """The nightly job's definition (parses the dbt project first, as a run does)."""
    from cost_pipeline.dbt_setup import prepare_manifest

    prepare_manifest()
    from cost_pipeline.definitions import defs

    return defs.resolve_job_def("nightly_cost_refresh_job")


def nightly_assets(selection) -> dict[str, list[str]]:
    """The nightly job's assets in the Dagster ``selection`` (an ``AssetSelection``), as user strings to key paths
    (``run_pipeline``'s ``asset_keys``). The manifest must be prepared (``nightly_job`` prepares it)."""
    from cost_pipeline.definitions import defs
    from cost_pipeline.defs.schedules import nightly_cost_refresh_job

    keys = (selection & nightly_cost_refresh_job.selection).resolve(defs.resolve_asset_graph())
    return {key.to_user_string(): key.path for key in sorted(keys)}


def _selected(text: str | None) -> list[list[str]] | None:
    """``run --select``: the key paths of the nightly job's assets ``text`` selects, in Dagster's asset selection
    syntax (``key:raw/serving_requests+``: a source and every asset downstream of it); None without --select (every
    asset). Raises ``SelectionError`` when it is no selection or selects none of them."""
    if text is None:
        return None
    import dagster as dg

    try:
        selection = dg.AssetSelection.from_string(text)
    except dg.DagsterError:
        raise SelectionError(
            f"--select {text!r} is not a Dagster asset selection (e.g. key:raw/serving_requests+)"
        ) from None
    nightly_job()  # the definitions, the dbt project parsed first as a run parses it
    keys = nightly_assets(selection)
    if not keys:
        raise SelectionError(f"--select {text!r} selects none of the nightly job's assets")
    return list(keys.values())


class SelectionError(Exception):
    """``run --select`` names no asset of the nightly job (exit 2)."""


def _ui(landing: Path, warehouse: Path, host: str, port: int) -> int:
    """``dagster dev`` on the code location, in the warehouse's persistent Dagster home (``dagster_home``: the folder
    beside the warehouse unless ``DAGSTER_HOME`` is set), so the UI shows the runs of ``cost-pipeline run|demo``
    and its runs write the same warehouse. The manifest is prepared first; then this process becomes ``dagster dev``."""
    from cost_pipeline.dbt_setup import prepare_manifest

    if not landing.is_dir():
        print(f"cost-pipeline: landing folder {landing} does not exist", file=sys.stderr)
        return 2
    _point_at(landing, warehouse)  # the manifest names the warehouse's database: prepared for this one
    prepare_manifest()
    with warehouse_instance(warehouse):  # the home beside the warehouse, with its dagster.yaml, on first use
        pass
    os.environ["DAGSTER_HOME"] = str(dagster_home(warehouse).resolve())
    dagster = str(Path(sys.executable).parent / "dagster")
    command = [dagster, "dev", "-m", "cost_pipeline.definitions", "--host", host, "--port", str(port)]
    print(f"cost-pipeline: the Dagster UI on http://{host}:{port}, home {os.environ['DAGSTER_HOME']}", flush=True)
    os.execv(dagster, command)
    return 0  # not reached: execv replaces this process


def _point_at(landing: Path, warehouse: Path) -> None:
    """The landing folder and warehouse the job's resources read from the environment."""
    os.environ["COST_LANDING_DIR"] = str(landing.resolve())
    os.environ["COST_WAREHOUSE"] = str(warehouse.resolve())


def checked_run_config(path: Path | None, landing: Path, warehouse: Path) -> dict:
    """The run config in ``path`` (none: {}), checked against the nightly job; raises ``RunConfigError``."""
    if path is None:
        return {}
    run_config = read_run_config(path)
    _point_at(landing, warehouse)
    check_run_config(nightly_job(), run_config)
    return run_config


def run_pipeline(
    landing: Path,
    warehouse: Path,
    run_config: dict | None = None,
    asset_keys: Sequence[Sequence[str]] | None = None,
    progress: NightProgress | None = None,
) -> bool:
    """Materialise every asset (the nightly job) in this process, or only ``asset_keys`` of it, with ``run_config``
    (the YAML of ``dagster job execute -c``), in the warehouse's persistent Dagster instance (``dagster_home``);
    ``progress`` receives every event. Returns whether the run succeeded."""
    _point_at(landing, warehouse)
    with warehouse_run_lock(warehouse), warehouse_instance(warehouse) as instance:
        job = nightly_job()
        import dagster as dg

        run_config = dict(run_config or {})
        if progress is not None:
            job = job.with_logger_defs({**job.loggers, LOGGER: progress.logger_def()})
            loggers = dict(run_config.get("loggers") or {})
            # Naming one logger would otherwise drop Dagster's own; at DEBUG, as Dagster logs when none is named.
            loggers.setdefault("console", {"config": {"log_level": "DEBUG"}})
            run_config["loggers"] = {**loggers, LOGGER: {}}
        # A failed step or blocking check ends the run unsuccessfully; the CLI reports it and exits 1.
        selection = None if asset_keys is None else [dg.AssetKey(list(key)) for key in asset_keys]
        result = job.execute_in_process(
            run_config=run_config or None, instance=instance, raise_on_error=False, asset_selection=selection
        )
        if not result.success and asset_keys is None:
            _publish_after_failure(result, warehouse, instance, run_config, job.loggers)
        return result.success


def _publish_after_failure(result, warehouse: Path, instance, run_config: dict, loggers) -> None:
    """After a night whose dbt build failed, what the ``publish_after_failed_build`` sensor does in a deployment:
    the publish job, so the marts the build rebuilt are published and the others keep their last copy."""
    from cost_pipeline.definitions import defs
    from cost_pipeline.defs.publish import publish_job, publishes_after

    failed = [event.step_key for event in result.get_step_failure_events() if event.step_key]
    if not publishes_after(failed, warehouse, result.run_id):
        return
    job = defs.resolve_job_def(publish_job.name).with_logger_defs(loggers)
    resources = {k: v for k, v in (run_config.get("resources") or {}).items() if k in job.required_resource_keys}
    config = {key: value for key, value in (("loggers", run_config.get("loggers")), ("resources", resources)) if value}
    job.execute_in_process(
        run_config=config or None,
        instance=instance,
        raise_on_error=False,
        tags={"cost_pipeline/night": result.run_id},
    )


def run_months(warehouse: Path, months: Sequence[str]) -> list[tuple[str, bool, dict]]:
    """One run of the monthly job per partition key in ``months`` (``defs.monthly``), in order, in the warehouse's
    persistent Dagster instance, so the UI shows the partitions materialised. Returns per month whether its run
    succeeded and the metadata of each asset it materialised (by asset key string)."""
    os.environ["COST_WAREHOUSE"] = str(warehouse.resolve())
    os.environ.setdefault("COST_LANDING_DIR", str(warehouse.resolve().parent))  # the job reads no landing file
    outcomes = []
    with warehouse_run_lock(warehouse), warehouse_instance(warehouse) as instance:
        nightly_job()  # the manifest the definitions load
        from cost_pipeline.definitions import defs

        job = defs.resolve_job_def("monthly_deliverables_job")
        for key in months:
            result = job.execute_in_process(
                partition_key=key, instance=instance, raise_on_error=False, tags={"cost_pipeline/monthly": key}
            )
            metadata = {
                event.asset_key.to_user_string(): {name: value.value for name, value in event.metadata.items()}
                for event in (e.materialization for e in result.get_asset_materialization_events())
            }
            outcomes.append((key, result.success, metadata))
    return outcomes


def landing_is_empty(landing: Path) -> bool:
    """No file (hidden ones aside) anywhere under the landing folder."""
    return not any(p.is_file() and not p.name.startswith(".") for p in landing.rglob("*"))


def run_log(warehouse: Path) -> Path:
    """Where a quiet run writes Dagster's and dbt's log: in the warehouse's Dagster home, replaced each run."""
    return dagster_home(warehouse) / "cost-pipeline.log"


@contextlib.contextmanager
def into_run_log(warehouse: Path) -> Iterator[None]:
    """Dagster's and dbt's output (stdout and stderr) into ``run_log`` while the block runs."""
    log_path = run_log(warehouse)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        yield


def night(
    landing: Path,
    warehouse: Path,
    run_config: dict,
    verbose: bool,
    out: TextIO | None = None,
    asset_keys: Sequence[Sequence[str]] | None = None,
) -> tuple[bool, NightProgress, SummaryFindings]:
    """Run the nightly job (only ``asset_keys`` of it, if named), printing one line per asset on ``out`` (stdout),
    then one per warning (a warn-severity dbt test that failed, a source not delivered on time), then the bill's
    tables after a run that succeeded (``report``) and the per-source summary, whose findings decide the exit code
    with the run's success (``exit_code``); Dagster's and dbt's log go to ``run_log`` unless ``verbose``."""
    progress = NightProgress(warehouse=warehouse, out=out if out is not None else sys.stdout)
    with contextlib.nullcontext() if verbose else into_run_log(warehouse):
        ok = run_pipeline(landing, warehouse, run_config, asset_keys=asset_keys, progress=progress)
    progress.print_warnings()
    findings = SummaryFindings()
    if ok and warehouse.exists():
        report(warehouse, out)
    if warehouse.exists():
        findings = print_source_summary(warehouse, out)
    return ok, progress, findings


def exit_code(ok: bool, findings: SummaryFindings) -> int:
    """The exit code of a night (docs/operations.md): 1 the run failed, else 8 a source's figures are stale, else 12
    rows were held, else 4 every row of a source was quarantined, else 0."""
    outcomes = ((1, not ok), (STALE_EXIT, findings.stale), (HELD_EXIT, findings.held), (4, findings.all_quarantined))
    return next((code for code, found in outcomes if found), 0)


def _format(value: object, width: int) -> str:
    text = "" if value is None else (f"{value:,.2f}" if isinstance(value, float) else str(value))
    return text.rjust(width)


# The compute bill's requested hours add up the runs whose request is known (issue 10): a run whose requested GPUs are
# not known (an export without ReqTRES) or that has no time limit adds nothing. A batch with such a run has its
# figure marked, and a footnote under the table says how many of its runs are not in it; a batch with no known
# request shows a dash (null), never 0.
PARTIAL_MARK = "*"
UNKNOWN_REQUEST_COLUMNS = ("jobs_without_gpu_request", "jobs_without_time_limit")


def _requested_hours(row: dict) -> tuple[str, str | None]:
    """The compute bill's ``requested h`` cell of ``row`` and its footnote (None when every run's request is in
    it)."""
    requested = row["requested_gpu_hours"]
    text = "-" if requested is None else str(requested)
    without_gpus, without_limit = (row[column] for column in UNKNOWN_REQUEST_COLUMNS)
    if without_gpus + without_limit == 0:
        return text, None
    runs = f"{without_gpus + without_limit:,} of {row['jobs']:,} run{'' if row['jobs'] == 1 else 's'}"
    reasons = f"{without_gpus:,} without ReqTRES, {without_limit:,} without a time limit"
    return text + PARTIAL_MARK, f"  {row['batch_id']}: {runs} not in it ({reasons})"


def _table(
    con: duckdb.DuckDBPyConnection,
    title: str,
    relation: str,
    columns: tuple,
    order: str,
    out,
    cells: dict[str, Callable[[dict], tuple[str, str | None]]] | None = None,
    extra: tuple[str, ...] = (),
    footnote: str = "",
) -> None:
    """Print ``columns`` of ``relation``; a column in ``cells`` is written by its function from the row (its columns
    and ``extra``), which also gives the row's footnote, printed under the table after ``footnote``."""
    names = [c for c, _, _ in columns] + [c for c in extra if c not in {c for c, _, _ in columns}]
    print(f"\n{title} ({relation}):", file=out)
    try:
        rows = con.execute(f"select {', '.join(names)} from {relation} order by {order}").fetchall()
    except duckdb.CatalogException:
        print("  not built: the run stopped before this mart", file=out)
        return
    print(" ".join(heading.rjust(width) for _, heading, width in columns), file=out)
    notes = []
    for values in rows:
        row = dict(zip(names, values, strict=True))
        texts = []
        for column, _, width in columns:
            if column in (cells or {}):
                text, note = cells[column](row)
                texts.append(text.rjust(width))
                notes += [note] if note else []
            else:
                texts.append(_format(row[column], width))
        print(" ".join(texts), file=out)
    if notes:
        print(footnote, *notes, sep="\n", file=out)


# The night's lines of what has no price (its cost null, never 0.00): each line's heading, the query of what it names
# and how it names each row. The months whose owned-GPU time had no price, the jobs on rented clusters that no bill
# prices yet, the batch-months whose storage holds an object in a storage class without a price, and the model-months
# whose requests have no cost.
_UNPRICED = (
    (
        "Unpriced months (no owned capacity in service; compute cost null, not 0.00)",
        "select month_start, occupied_gpu_hours from marts.fct_gpu_hour_price where is_unpriced order by 1",
        lambda month, hours: f"{month:%Y-%m} ({float(hours):,.2f} GPU-h)",
    ),
    (
        "Cloud jobs not billed yet (rented cluster, no FOCUS line; compute cost null, not 0.00)",
        "select job_id, coalesce(batch_id, 'unattributed'), sum(occupied_gpu_hours) from marts.fct_resource_book "
        "where cost_source = 'cloud_bill' and is_unpriced group by 1, 2 order by 1, 2",
        lambda job, batch, hours: f"{job} ({batch}, {float(hours):,.2f} GPU-h)",
    ),
    (
        "Unpriced storage (an object in a storage class storage_prices does not price; storage cost null, not 0.00)",
        "select month, batch_id, cost_detail from marts.fct_cost_lines "
        "where cost_source = 'storage_inventory' and is_unpriced order by 1, 2, 3",
        lambda month, batch, purpose: f"{month:%Y-%m} {batch} ({purpose})",
    ),
    (
        "Unpriced serving (a replica without a price, or no replica, in the model's month, or a quarantined replica "
        "in the month; request costs null, not 0.00)",
        "select month, model, sum(unpriced_requests) from marts.fct_request_group_costs "
        "where unpriced_requests > 0 group by month, model order by month, model",
        lambda month, model, requests: f"{month:%Y-%m} {model} ({requests:,} request{'' if requests == 1 else 's'})",
    ),
)


def _unpriced(con: duckdb.DuckDBPyConnection, out) -> None:
    """One line for each kind of figure without a price that the night holds (``_UNPRICED``)."""
    for heading, sql, named in _UNPRICED:
        try:
            rows = con.execute(sql).fetchall()
        except (duckdb.CatalogException, duckdb.BinderException):  # not built, or built before the column was
            continue
        if rows:
            print(f"\n{heading}: {', '.join(named(*row) for row in rows)}", file=out)


def report(warehouse: Path, out: TextIO | None = None) -> None:
    """Print the quarantine (file, line, rule), the unpriced months, the per-batch compute and full bills, plan vs
    actual and the service book (to stdout unless ``out``)."""
    out = sys.stdout if out is None else out
    con = duckdb_session.connect(str(warehouse), read_only=True)
    try:
        quarantined = con.execute(
            "select source, source_file, line, rule, message from raw.quarantine order by source, source_file, line"
        ).fetchall()
        if quarantined:
            print(f"\n{len(quarantined)} row(s) quarantined (see raw.quarantine):", file=out)
            for source, source_file, line, rule, message in quarantined[:20]:
                print(f"  [{source}] {source_file}, line {line}: rule {rule}: {message}", file=out)
        for name, _, since in source_failures(con):  # before the tables, which hold its rows of that night
            print(f"\nstale: the tables below hold {name}'s rows as of {as_of(since)}: tonight's load failed", file=out)
        _unpriced(con, out)
        _table(
            con,
            "Compute bill per batch",
            "marts.fct_batch_compute",
            BATCH_COLUMNS,
            "batch_id = 'unattributed', batch_id",
            out,
            cells={"requested_gpu_hours": _requested_hours},
            extra=UNKNOWN_REQUEST_COLUMNS,
            footnote=f"{PARTIAL_MARK} requested h adds up the runs whose request is known ({PARTIAL_MARK}: not every "
            "run's; -: no run's):",
        )
        _table(
            con,
            "Full cost per batch",
            "marts.fct_batch_costs",
            FULL_COST_COLUMNS,
            "batch_id = 'unattributed', batch_id",
            out,
        )
        _table(con, "Plan vs actual", "marts.fct_batch_budget", BUDGET_COLUMNS, "batch_id", out)
        _table(con, "Service book per model and month", "marts.fct_service_month", SERVICE_COLUMNS, "month, model", out)
        _table(con, "Cost per successful task", "marts.fct_model_task_economics", TASK_COLUMNS, "model", out)
    finally:
        con.close()
    print(f"\nWarehouse: {warehouse}  (schemas raw, staging, intermediate, marts, history, audit)", file=out)


def _docs(check: bool) -> int:
    from cost_pipeline import docgen

    if check:
        stale = docgen.stale_blocks()
        for name in stale:
            print(
                f"cost-pipeline: {docgen.BLOCKS[name].file}: block '{name}' is out of date; run `cost-pipeline docs`",
                file=sys.stderr,
            )
        return 1 if stale else 0
    for path in docgen.write_docs():
        print(f"rewrote {path.relative_to(docgen.REPO_ROOT)}")
    return 0


def _docs_site(out: Path, warehouse: Path | None) -> int:
    """The dbt docs site of ``warehouse`` as one offline HTML file (``cost_pipeline.docs_site``)."""
    from cost_pipeline.docs_site import write_site

    if warehouse is None:
        print("cost-pipeline: docs --site needs --warehouse: the site shows that warehouse's tables", file=sys.stderr)
        return 2
    code, written = _locked(warehouse, lambda: write_site(warehouse, out))
    if code:
        return code
    print(f"wrote {written}: the dbt docs site, one file that works offline")
    return 0


def _locked(warehouse: Path, action: Callable[[], object], reads_only: bool = False) -> tuple[int, object]:
    """``action()`` on an existing, usable warehouse under its run lock (shared when the action ``reads_only``): (0,
    its result), or (exit code, None) after one line on stderr for a busy or unusable warehouse or a refusal (a
    ``CommandError``: retract, journal, close, report)."""
    from cost_pipeline.command_error import CommandError

    try:
        with warehouse_run_lock(warehouse, shared=reads_only):
            check_warehouse(warehouse, must_exist=True, read_only=reads_only)
            return 0, action()
    except WarehouseBusy as busy:
        print(f"cost-pipeline: {busy}", file=sys.stderr)
        return 3, None
    except WarehouseUnusable as unusable:
        print(f"cost-pipeline: {unusable}", file=sys.stderr)
        return UNUSABLE_EXIT, None
    except CommandError as refused:
        print(f"cost-pipeline: {refused}", file=sys.stderr)
        return refused.exit_code, None


def _read_locked(warehouse: Path, read: Callable[[duckdb.DuckDBPyConnection], object]) -> tuple[int, object]:
    """``read(con)`` on a read-only connection to the warehouse, under its run lock held shared (``_locked``)."""

    def action() -> object:
        con = duckdb_session.connect(str(warehouse), read_only=True)
        try:
            return read(con)
        finally:
            con.close()

    return _locked(warehouse, action, reads_only=True)


def _retract(warehouse: Path, source_file: str, reason: str | None, by: str | None) -> int:
    """Record a file's retraction (``cost_pipeline.retract``); one line on stdout, or one on stderr and its code."""
    from cost_pipeline.retract import retract

    code, retracted = _locked(warehouse, lambda: retract(warehouse, source_file, reason, by))
    if code:
        return code
    sources = ", ".join(f"{r.source}: {r.rows:,} rows" for r in retracted)
    print(f"retracted {retracted[0].source_file} ({sources}); its rows leave the figures on the next night")
    return 0


def _journal(warehouse: Path, month_text: str, out_path: Path | None, close: bool, by: str | None) -> int:
    """Print (or write to ``out_path``) a month's journal, or close the month (``cost_pipeline.journal``); errors are
    one line on stderr and their exit code."""
    from cost_pipeline.journal import (
        JournalError,
        close_month,
        held_notes,
        journal_lines,
        parse_month,
        write_csv,
    )

    try:
        month = parse_month(month_text)
    except JournalError as wrong:
        print(f"cost-pipeline: {wrong}", file=sys.stderr)
        return wrong.exit_code

    def action():
        con = duckdb_session.connect(str(warehouse), read_only=not close)
        try:
            held = held_notes(con, month)  # before a close: what the month holds as it is frozen
            return (close_month(con, month, by), True) if close else journal_lines(con, month), held
        finally:
            con.close()

    code, result = _locked(warehouse, action, reads_only=not close)
    if code:
        return code
    (lines, closed), held = result
    for note in held:
        print(f"cost-pipeline: {note}", file=sys.stderr)
    if close:
        print(f"closed {month:%Y-%m}: {len(lines)} journal lines frozen in raw.closed_journal")
    elif out_path is None:
        write_csv(lines, sys.stdout)
    else:
        with open(out_path, "w", encoding="utf-8", newline="") as out:
            write_csv(lines, out)
        state = "closed: the frozen lines" if closed else "open"
        print(f"wrote {out_path}: {len(lines)} journal lines for {month:%Y-%m} ({state})")
    return 0


def _statement(
    warehouse: Path,
    batch: str | None,
    team: str | None,
    month_text: str | None,
    out_path: Path | None,
    pdf: bool = False,
) -> int:
    """Write a batch's statement or a team's monthly chargeback as HTML (``cost_pipeline.statement``), or as PDF
    (``cost_pipeline.statement_pdf``), to stdout or ``out_path``; errors are one line on stderr and their exit code
    (2 for an unknown batch, team or month, 11 when PDF cannot be written here)."""
    from cost_pipeline.journal import JournalError, parse_month
    from cost_pipeline.statement import batch_statement, team_statement
    from cost_pipeline.statement_pdf import PdfUnavailable, html_to_pdf

    if team is not None and month_text is None:
        print("cost-pipeline: report --team needs --month YYYY-MM: a chargeback is a month's", file=sys.stderr)
        return 2
    try:
        month = None if month_text is None else parse_month(month_text)
    except JournalError as wrong:
        print(f"cost-pipeline: {wrong}", file=sys.stderr)
        return wrong.exit_code

    code, document = _read_locked(
        warehouse, lambda con: batch_statement(con, batch, month) if team is None else team_statement(con, team, month)
    )
    if code:
        return code
    try:
        content = html_to_pdf(document) if pdf else document.encode("utf-8")
    except PdfUnavailable as unavailable:
        print(f"cost-pipeline: {unavailable}", file=sys.stderr)
        return unavailable.exit_code
    if out_path is not None:
        out_path.write_bytes(content)
        print(f"wrote {out_path}: the statement of {'batch ' + batch if team is None else 'team ' + team}")
    elif pdf:
        sys.stdout.flush()
        sys.stdout.buffer.write(content)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(document)
    return 0


def _export(warehouse: Path, month_text: str | None, out_path: Path) -> int:
    """Write the resource book as FOCUS 1.2 (``cost_pipeline.focus_export``) to ``out_path``; errors are one line on
    stderr and their exit code."""
    from cost_pipeline.focus_export import FOCUS_VERSION, write_focus
    from cost_pipeline.journal import JournalError, parse_month

    try:
        month = None if month_text is None else parse_month(month_text)
    except JournalError as wrong:
        print(f"cost-pipeline: {wrong}", file=sys.stderr)
        return wrong.exit_code

    code, rows = _read_locked(warehouse, lambda con: write_focus(con, out_path, month))
    if code:
        return code
    months = "every month" if month is None else f"{month:%Y-%m}"
    print(f"wrote {out_path}: {rows} FOCUS {FOCUS_VERSION} rows of the resource book ({months})")
    return 0


def _monthly(warehouse: Path, month: str | None, first: str | None, last: str | None) -> int:
    """Materialise the monthly partitions of ``month``, or of every month from ``first`` to ``last``: one line per
    month; Dagster's log goes to ``run_log``. Exit 2 for a month that is no partition, 1 if a month's run failed."""
    from cost_pipeline.journal import JournalError, next_month, parse_month

    try:
        months = [parse_month(month)] if month is not None else [parse_month(first), parse_month(last)]
    except JournalError as wrong:
        print(f"cost-pipeline: {wrong}", file=sys.stderr)
        return wrong.exit_code
    if month is None:
        start, end = months
        months = [start]
        while months[-1] < end:
            months.append(next_month(months[-1]))
    from cost_pipeline.defs.partitions import MONTH_FORMAT, monthly_partitions

    keys = [f"{m:{MONTH_FORMAT}}" for m in months]
    partitions = monthly_partitions.get_partition_keys()
    outside = [key for key in keys if key not in partitions]
    if outside or not keys:
        print(
            f"cost-pipeline: {', '.join(outside) or 'the range'} is no monthly partition: the partitions are "
            f"{partitions[0]} to {partitions[-1]} (the contract's operations.first_month to this month)",
            file=sys.stderr,
        )
        return 2

    def action() -> list[tuple[str, bool, dict]]:
        with into_run_log(warehouse):
            return run_months(warehouse, keys)

    code, outcomes = _locked(warehouse, action)
    if code:
        return code
    for key, ok, metadata in outcomes:
        if not ok:
            print(f"cost-pipeline: the monthly run of {key} failed; see {run_log(warehouse)}", file=sys.stderr)
            return 1
        journal, focus = metadata["monthly/gl_journal"], metadata["monthly/focus_export"]
        statements, marts = metadata["monthly/chargeback_statements"], metadata["monthly/cost_marts"]
        for note in journal["held"]:  # as `journal --month` prints them
            print(f"cost-pipeline: {note}", file=sys.stderr)
        state = "closed: the frozen lines" if journal["closed"] else "open"
        print(
            f"{key}: {Path(journal['path']).parent}: {journal['lines']} journal lines ({state}), "
            f"{focus['rows']} FOCUS rows, {statements['teams']} team statement(s), "
            f"{marts['dagster/row_count']} rows of {marts['marts']} month-keyed marts"
        )
    return 0


def _failed(warehouse: Path, progress: NightProgress, wholly: str, log: Path | None) -> None:
    """After a failed night: which night the warehouse's tables are from (they are not printed), then the root
    cause as the last line."""
    when = last_good_night(warehouse)
    stale = (
        f"from the night that ended {when:%Y-%m-%d %H:%M} UTC, the last that succeeded"
        if when
        else "from no night that succeeded"
    )
    if progress.kept is None:
        print(f"\nNo tables printed: tonight's marts were not all rebuilt; those in {warehouse} are {stale}.")
    else:
        print(
            "\nNo tables printed: tonight's build did not rebuild every mart. The published files hold the marts it "
            f"rebuilt; {len(progress.kept)} kept their last published copy (main.stale in the files):"
        )
        for mart, kept in sorted(progress.kept.items()):
            night = f"{datetime.fromisoformat(kept['as_of']):%Y-%m-%d %H:%M} UTC" if kept["as_of"] else "no night"
            print(f"stale: marts.{mart} as of {night}: {kept['reason']}")
    if log is not None:
        print(f"Dagster's and dbt's log: {log}")
    cause = progress.failures[0] if progress.failures else "see the messages above"
    print(f"cost-pipeline: the run failed: {cause}" + (f"; {wholly}" if wholly else ""), file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cost-pipeline", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('cost_pipeline')}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="write the built-in scenario, run the nightly job on it, print the bill")
    demo.add_argument("--dir", type=Path, default=Path("demo"), help="where to write landing/ and warehouse.duckdb")
    run = commands.add_parser("run", help="run the nightly job on a landing folder of real exports")
    run.add_argument("--landing", type=Path, required=True, help="landing folder, one sub-folder per source")
    run.add_argument("--warehouse", type=Path, required=True, help="DuckDB warehouse file (created if missing)")
    run.add_argument(
        "--allow-empty", action="store_true", help="run even if the landing folder holds no files (else exit 7)"
    )
    run.add_argument(
        "--select",
        metavar="SELECTION",
        help="only these assets of the nightly job, in Dagster's asset selection syntax "
        "('key:raw/serving_requests+': a source and every asset downstream of it); the rest stay as an earlier "
        "run left them",
    )
    for command in (demo, run):
        command.add_argument(
            "--config",
            type=Path,
            metavar="FILE",
            help="run-config YAML as 'dagster job execute -c' takes it (a source's options)",
        )
        command.add_argument(
            "-v", "--verbose", action="store_true", help="show Dagster's and dbt's log instead of one line per asset"
        )
    ui = commands.add_parser(
        "ui",
        help="start the Dagster UI (dagster dev) on a landing folder and warehouse, sharing the CLI's run history",
    )
    ui.add_argument("--landing", type=Path, required=True, help="landing folder, one sub-folder per source")
    ui.add_argument("--warehouse", type=Path, required=True, help="DuckDB warehouse file (created if missing)")
    ui.add_argument("--host", default="127.0.0.1", help="address the UI listens on (default 127.0.0.1)")
    ui.add_argument("--port", type=int, default=3000, help="port the UI listens on (default 3000)")
    commands.add_parser("prepare", help="write dbt_project/target/manifest.json (dbt parse only if anything changed)")
    docs = commands.add_parser(
        "docs",
        help="rewrite the generated reference blocks in docs/ (inputs, marts, contract); --site: the dbt docs site",
    )
    docs.add_argument("--check", action="store_true", help="change nothing; exit 1 if a block is out of date")
    docs.add_argument(
        "--site",
        type=Path,
        metavar="FILE",
        help="instead, write the dbt docs site as one HTML file that works offline (needs --warehouse)",
    )
    docs.add_argument("--warehouse", type=Path, help="with --site: the DuckDB warehouse whose catalog it shows")
    retraction = commands.add_parser("retract", help="take a landing file's rows out of the next night's figures")
    retraction.add_argument("file", help="the file as the ledger names it (raw.ingested_files), e.g. services/x.csv")
    retraction.add_argument("--reason", help="why its rows leave the figures (required; kept in raw.retractions)")
    retraction.add_argument("--warehouse", type=Path, required=True, help="DuckDB warehouse file")
    retraction.add_argument("--by", help="who retracts it (default: the operating-system user)")
    journal = commands.add_parser("journal", help="write a month's general-ledger journal as CSV (stdout or --out)")
    close = commands.add_parser("close", help="close a month: freeze its journal; later changes post as adjustments")
    for command in (journal, close):
        command.add_argument("--month", required=True, help="the month, YYYY-MM")
        command.add_argument("--warehouse", type=Path, required=True, help="DuckDB warehouse file")
    journal.add_argument("--out", type=Path, metavar="FILE", help="write the CSV here instead of stdout")
    close.add_argument("--by", help="who closes it (default: the operating-system user)")
    statement = commands.add_parser(
        "report",
        help="write a batch's statement, or a team's monthly chargeback, as one HTML file, or PDF with --pdf (stdout "
        "or --out)",
    )
    whose = statement.add_mutually_exclusive_group(required=True)
    whose.add_argument("--batch", help="the batch (dim_batches.batch_id)")
    whose.add_argument("--team", help="the team (dim_batches.team); needs --month")
    statement.add_argument("--month", help="the month, YYYY-MM: the batch's bill of that month, or the chargeback's")
    statement.add_argument("--warehouse", type=Path, required=True, help="DuckDB warehouse file")
    statement.add_argument(
        "--out", type=Path, metavar="FILE", help="write the statement (HTML, or PDF with --pdf) here instead of stdout"
    )
    statement.add_argument(
        "--pdf", action="store_true", help="write the same statement as PDF (the pdf extra: WeasyPrint and Pango)"
    )
    export = commands.add_parser("export", help="write the resource book as a FOCUS 1.2 file (CSV, or .parquet)")
    export.add_argument("--focus", action="store_true", required=True, help="FOCUS 1.2 (the one export format)")
    export.add_argument("--month", help="the month, YYYY-MM (default: every month)")
    export.add_argument("--warehouse", type=Path, required=True, help="DuckDB warehouse file")
    export.add_argument("--out", type=Path, required=True, metavar="FILE", help="the file; Parquet if it ends .parquet")
    monthly = commands.add_parser(
        "monthly",
        help="write a month's journal, FOCUS export, team statements and month-keyed marts beside the warehouse "
        "(partitions)",
    )
    which = monthly.add_mutually_exclusive_group(required=True)
    which.add_argument("--month", help="the month, YYYY-MM")
    which.add_argument("--from", dest="first", metavar="YYYY-MM", help="backfill: the first month (with --to)")
    monthly.add_argument("--to", dest="last", metavar="YYYY-MM", help="backfill: the last month")
    monthly.add_argument("--warehouse", type=Path, required=True, help="DuckDB warehouse file")
    return parser


def main(argv: list[str] | None = None) -> int:
    from cost_pipeline.command_error import CommandError

    try:
        return _command(_parser().parse_args(argv))
    except CommandError as refused:  # one that escaped its command: a dbt project that does not parse
        print(f"cost-pipeline: {refused}", file=sys.stderr)
        return refused.exit_code


def _command(args: argparse.Namespace) -> int:

    if args.command == "retract":
        return _retract(args.warehouse, args.file, args.reason, args.by)

    if args.command in ("journal", "close"):
        close = args.command == "close"
        return _journal(args.warehouse, args.month, None if close else args.out, close, args.by if close else None)

    if args.command == "report":
        return _statement(args.warehouse, args.batch, args.team, args.month, args.out, args.pdf)

    if args.command == "export":
        return _export(args.warehouse, args.month, args.out)

    if args.command == "monthly":
        if (args.first is None) != (args.last is None):
            print("cost-pipeline: monthly --from needs --to (and --to needs --from)", file=sys.stderr)
            return 2
        return _monthly(args.warehouse, args.month, args.first, args.last)

    if args.command == "docs" and args.site is not None:
        return _docs_site(args.site, args.warehouse)
    if args.command == "docs":
        return _docs(check=args.check)

    if args.command == "ui":
        return _ui(args.landing, args.warehouse, args.host, args.port)

    if args.command == "prepare":
        from cost_pipeline.dbt_setup import prepare_manifest

        print(prepare_manifest())
        return 0
    warehouse = args.dir / "warehouse.duckdb" if args.command == "demo" else args.warehouse
    if args.command == "run" and not args.landing.is_dir():
        print(f"cost-pipeline: landing folder {args.landing} does not exist", file=sys.stderr)
        return 2
    # A wrong argument (exit 2) is named before the landing folder is judged empty (exit 7).
    try:
        run_config = checked_run_config(
            args.config, args.dir / "landing" if args.command == "demo" else args.landing, warehouse
        )
    except RunConfigError as wrong:
        print(f"cost-pipeline: --config {wrong}", file=sys.stderr)
        return 2
    try:
        if getattr(args, "select", None) is not None:
            _point_at(args.landing, warehouse)  # the manifest is prepared for the warehouse's file name
        asset_keys = _selected(getattr(args, "select", None))
    except SelectionError as wrong:
        print(f"cost-pipeline: {wrong}", file=sys.stderr)
        return 2
    if args.command == "run" and not args.allow_empty and landing_is_empty(args.landing):
        print(
            f"cost-pipeline: landing folder {args.landing} holds no files: nothing to load; the warehouse is left "
            "as it is (--allow-empty runs anyway)",
            file=sys.stderr,
        )
        return EMPTY_LANDING_EXIT
    try:
        # Held from before the demo rewrites its landing folder until the report is printed.
        with warehouse_run_lock(warehouse):
            check_warehouse(warehouse)
            landing = write_demo_landing(args.dir / "landing") if args.command == "demo" else args.landing
            if asset_keys is not None:
                print(
                    f"cost-pipeline: --select: {len(asset_keys)} of the nightly job's assets; the others stay as an "
                    "earlier run left them"
                )
            ok, progress, findings = night(landing, warehouse, run_config, verbose=args.verbose, asset_keys=asset_keys)
    except WarehouseBusy as busy:
        print(f"cost-pipeline: {busy}", file=sys.stderr)
        return 3
    except WarehouseUnusable as unusable:
        print(f"cost-pipeline: {unusable}", file=sys.stderr)
        return UNUSABLE_EXIT
    wholly = (
        f"every row was quarantined for {', '.join(findings.all_quarantined)} (see raw.quarantine)"
        if findings.all_quarantined
        else ""
    )
    code = exit_code(ok, findings)
    if code == 1:
        _failed(warehouse, progress, wholly, log=None if args.verbose else run_log(warehouse))
        return code
    held = (
        f"rows of {', '.join(findings.held)} passed the contract and failed dbt tests: they are quarantined and "
        "tonight's figures leave them out (see the held: lines; the contract needs a rule)"
        if findings.held
        else ""
    )
    if code == STALE_EXIT:
        print(
            f"cost-pipeline: figures from {', '.join(findings.stale)} are stale: the load failed and raw keeps the "
            "last good night's rows (see the stale: lines, raw.source_failures)"
            + "".join(f"; {also}" for also in (held, wholly) if also),
            file=sys.stderr,
        )
    elif code == HELD_EXIT:
        print(f"cost-pipeline: {held}" + (f"; {wholly}" if wholly else ""), file=sys.stderr)
    elif code == 4:
        print(f"cost-pipeline: {wholly}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
