"""What ``cost-pipeline run|demo`` prints while a night runs: one line per asset (name, rows, seconds), a line per
failed error-severity check, then a ``warning:`` line per warn-severity dbt test that failed (its rows returned and
the table that stores them, if any; the night goes on) and per source not delivered on time (its freshness check),
and the root cause of a failure, naming the file, asset or dbt model.

Dagster's and dbt's own log (about 2,000 lines a night) go to a log file instead; ``-v`` shows them. The lines come
from a Dagster logger that the CLI adds to the nightly job (``NightProgress.logger_def``): it sees every event of
the run, in order, in the run's own thread.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import dagster as dg
import duckdb

from cost_pipeline import duckdb_session
from cost_pipeline.dbt_failures import STORED_FAILURES
from cost_pipeline.defs.freshness import CHECK as FRESHNESS_CHECK
from cost_pipeline.ingest.lib.warehouse import quote

LOGGER = "cli_progress"
NAME_WIDTH = 48
# Where a dbt error names its node: "Database Error in model fct_x (models/marts/fct_x.sql)".
_DBT_NODE = re.compile(r"\b(?:Error|Failure) in (model|test|snapshot|unit_test|seed) (\S+) \(([^)]+)\)")
_MODULE_PATH = re.compile(r"^(?:\w+\.)+(?=\w+: )")
# dagster-dbt's metadata of a test's check: the rows the test returned.
_FAILED_ROWS = "dagster_dbt/failed_row_count"
# Counts an asset's metadata may hold, in the order they are shown (ingest, contract tables, ledger, publish).
_COUNTS = (("rows_staged", "rows"), ("rows", "rows"), ("ignored_files", "ignored files"), ("finance_tables", "tables"))


@dataclass
class _Model:
    key: dg.AssetKey
    seconds: float | None


@dataclass
class NightProgress:
    """Collects a run's events into progress lines on ``out`` and its failures into ``failures``."""

    warehouse: Path
    out: TextIO
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # a line per warn-severity dbt test that failed
    assets: int = 0
    # mart -> {"reason", "as_of"}: the marts the night's publication kept from the last one (its ``stale_marts``);
    # None while nothing was published
    kept: dict[str, dict] | None = None
    _started: dict[str, float] = field(default_factory=dict)
    _models: list[_Model] = field(default_factory=list)

    def logger_def(self) -> dg.LoggerDefinition:
        """A Dagster logger that hands every event of the run to this object."""
        progress = self

        class _Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                event = getattr(record, "dagster_event", None)
                if isinstance(event, dg.DagsterEvent):
                    progress.handle(event, record.created)

        @dg.logger(description="One line per materialised asset for the cost-pipeline command line.")
        def cli_progress(_context: Any) -> logging.Logger:
            logger = logging.getLogger(f"cost_pipeline.progress.{id(progress)}")
            logger.setLevel(logging.DEBUG)
            logger.propagate = False
            logger.handlers = [_Handler()]
            return logger

        return cli_progress

    def handle(self, event: dg.DagsterEvent, created: float) -> None:
        kind = event.event_type_value
        if kind == "STEP_START":
            self._started[event.step_key] = created
        elif kind == "ASSET_MATERIALIZATION":
            self._materialized(event, created)
        elif kind == "ASSET_CHECK_EVALUATION":
            self._checked(event.event_specific_data)
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE"):
            self._print_models()
            if kind == "STEP_FAILURE":
                self.failures.append(root_cause(event.step_key, event.event_specific_data.error))
        elif kind == "RUN_FAILURE" and not self.failures:
            self.failures.append(event.message or "the run failed")

    def _materialized(self, event: dg.DagsterEvent, created: float) -> None:
        materialization = event.event_specific_data.materialization
        metadata = {name: value.value for name, value in materialization.metadata.items()}
        if "unique_id" in metadata:  # a dbt model: its rows are counted when dbt has let go of the warehouse
            duration = metadata.get("Execution Duration")
            self._models.append(_Model(materialization.asset_key, float(duration) if duration is not None else None))
            return
        count = next(((metadata[name], unit) for name, unit in _COUNTS if name in metadata), None)
        detail = f"{count[0]:,} {count[1]}" if count else ""
        quarantined = metadata.get("rows_quarantined")
        if "stale_marts" in metadata:
            self.kept = dict(metadata["stale_marts"])
            detail += f" ({len(self.kept)} kept)" if self.kept else ""
        if metadata.get("load_failed"):
            detail += " kept (load failed)"
        elif quarantined:
            detail += f" (+{quarantined:,} quarantined)"
        started = self._started.get(event.step_key)
        self._line(materialization.asset_key, detail, created - started if started is not None else None)

    def _checked(self, evaluation: Any) -> None:
        if evaluation.passed:
            return
        if evaluation.severity != dg.AssetCheckSeverity.ERROR:
            self._warned(evaluation)
            return
        counts = ", ".join(
            f"{name} {value.value}"
            for name, value in evaluation.metadata.items()
            if isinstance(value.value, int) and not isinstance(value.value, bool)
        )
        where = evaluation.asset_key.to_user_string()
        print(f"check {evaluation.check_name} on {where} failed" + (f" ({counts})" if counts else ""), file=self.out)

    def _warned(self, evaluation: Any) -> None:
        """A warn-severity dbt test, or a source's freshness check, that failed: kept for ``print_warnings``. The night
        goes on; other warning checks (quarantine, ignored, missing, stale, held rows) have their own lines in the
        summary."""
        metadata = {name: value.value for name, value in evaluation.metadata.items()}
        if evaluation.check_name == FRESHNESS_CHECK:
            self.warnings.append(
                f"warning: {evaluation.asset_key.to_user_string()} not delivered on time: "
                f"{evaluation.description or 'see its delivered_on_time check'} (the night goes on on what it has)"
            )
            return
        if not str(metadata.get("unique_id", "")).startswith("test."):
            return
        rows = metadata.get(_FAILED_ROWS)
        returned = "failed" if rows is None else f"returned {rows:,} failing row{'' if rows == 1 else 's'}"
        stored = metadata.get(STORED_FAILURES)
        where = evaluation.asset_key.to_user_string()
        self.warnings.append(
            f"warning: dbt test {evaluation.check_name} on {where} {returned}"
            + (f", stored in {stored}" if stored else "")
            + " (warn severity: the night goes on)"
        )

    def print_warnings(self) -> None:
        """One line per warn-severity dbt test that failed tonight, after the assets and failed error checks, by
        test name (dbt finishes its tests in no fixed order)."""
        if self.warnings:
            print(file=self.out)
        for line in sorted(self.warnings):
            print(line, file=self.out, flush=True)

    def _print_models(self) -> None:
        """The dbt models of the step that just ended, with the rows of each table (views show as such)."""
        if not self._models:
            return
        models, self._models = self._models, []
        rows = _table_rows(self.warehouse, [m.key for m in models])
        for model in models:
            count = rows.get(model.key)
            self._line(model.key, "view" if count is None else f"{count:,} rows", model.seconds)

    def _line(self, key: dg.AssetKey, detail: str, seconds: float | None) -> None:
        self.assets += 1
        timing = f"{seconds:7.1f} s" if seconds is not None else ""
        print(f"{key.to_user_string():<{NAME_WIDTH}} {detail:>24} {timing}".rstrip(), file=self.out, flush=True)


def _table_rows(warehouse: Path, keys: list[dg.AssetKey]) -> dict[dg.AssetKey, int]:
    """Rows of each [schema, table] key that is a table in the warehouse (views are not run to count them)."""
    try:
        con = duckdb_session.connect(str(warehouse), read_only=True)
    except duckdb.Error:
        return {}
    try:
        tables = {(s, t) for s, t in con.execute("select schema_name, table_name from duckdb_tables()").fetchall()}
        rows = {}
        for key in keys:
            if len(key.path) == 2 and tuple(key.path) in tables:
                schema, table = key.path
                [(rows[key],)] = con.execute(f"select count(*) from {quote(schema)}.{quote(table)}").fetchall()
        return rows
    finally:
        con.close()


def root_cause(step_key: str | None, error: Any) -> str:
    """One line: the asset (or dbt model, with its file) where the step failed and the innermost error's message."""
    where = step_key.replace("__", "/") if step_key else "the run"
    text = error.message if error is not None else ""
    while error is not None and error.cause is not None:
        error = error.cause
        text = error.message
    node = _DBT_NODE.search(text)
    if node:
        kind, name, path = node.groups()
        after = [line.strip() for line in text[node.end() :].splitlines() if line.strip()]
        return f"dbt {kind} {name} ({path})" + (f": {after[0]}" if after else "")
    lines = [line.strip() for line in text.splitlines() if line.strip()] or ["failed"]
    first = _MODULE_PATH.sub("", lines[0])  # dagster._core.errors.DagsterError: ... -> DagsterError: ...
    if first.endswith(":") and len(lines) > 1:  # "1 blocking asset check failed:" names the check on the next line
        first += " " + lines[1]
    return f"{where}: {first}"
