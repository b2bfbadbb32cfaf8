"""The small landing sources: where their files live, how a line becomes a row, which schema checks it.

Each source is a ``Source`` value; ``load_source`` is the one loader they share. The large sources, device
samples (``telemetry.py``) and S3 Inventory files (``s3_inventory.py``), load inside DuckDB instead
(``in_database.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from cost_pipeline.contract import Contract
from cost_pipeline.contract import schemas as s
from cost_pipeline.ingest.focus import focus_line_parser, focus_row
from cost_pipeline.ingest.harvest import harvest_line_parser
from cost_pipeline.ingest.parquet import parse_parquet
from cost_pipeline.ingest.records import (
    FileRejected,
    ParsedFile,
    Rejection,
    csv_line_parser,
    jsonl_line_parser,
    landing_files,
    parse_file,
)
from cost_pipeline.ingest.s3_inventory import load_storage_inventory
from cost_pipeline.ingest.telemetry import load_device_samples
from cost_pipeline.ingest.validate import validate_rows
from cost_pipeline.ingest.warehouse import IngestReport, write_validated_source
from cost_pipeline.parsing import slurm
from cost_pipeline.parsing.timestamps import utc_naive

LineParser = Callable[[list[str], ParsedFile], None]
# The large sources load and validate inside DuckDB (``in_database.py``), each file by its own loader.
IN_DATABASE: dict[str, Callable[[duckdb.DuckDBPyConnection, Path], IngestReport]] = {
    "device_samples": load_device_samples, "storage_inventory": load_storage_inventory}


@dataclass(frozen=True)
class SacctOptions:
    """How the sacct files were written: delimiter, and the field list when they have no header line."""

    delimiter: str = "|"
    fields: tuple[str, ...] | None = None


def sacct_line_parser(options: SacctOptions) -> LineParser:
    def parse(lines: list[str], parsed: ParsedFile) -> None:
        fields = options.fields
        if fields is None and lines:
            header = lines[0].split(options.delimiter)
            if "JobID" not in header:
                raise FileRejected("sacct_header", "first line is not an sacct header with JobID")
        for line, values, raw in slurm.split_sacct_lines(lines, options.delimiter, fields):
            parsed.rows_in += 1
            if values is None:
                parsed.rejections.append(Rejection(line, "sacct_field_count",
                                                   "field count differs from the header", raw))
                continue
            try:
                row = slurm.parse_sacct_record(values)
            except slurm.FieldError as error:
                parsed.rejections.append(Rejection(line, error.rule, str(error), raw))
                continue
            row["source_line"] = line
            parsed.rows.append(row)

    return parse


_EVENT_FIELDS = ("job_id", "event", "at", "gpus_requested", "gpus_allocated", "time_limit_s", "state", "labels")
_LABEL_COLUMNS = {"batch": "batch_id", "phase": "phase", "reason": "run_reason", "restart_of": "restart_of",
                  "continues": "continues", "end_reason": "end_reason"}
_K8S_STATES = {"succeeded": "COMPLETED", "failed": "FAILED", "oomkilled": "OUT_OF_MEMORY",
               "evicted": "PREEMPTED", "deadlineexceeded": "TIMEOUT"}


def job_event_line_parser() -> LineParser:
    """Kubernetes-style job events (JSONL); labels flatten into the same label columns as sacct."""
    read_json = jsonl_line_parser(_EVENT_FIELDS)

    def parse(lines: list[str], parsed: ParsedFile) -> None:
        read_json(lines, parsed)
        kept = []
        for row in parsed.rows:
            labels = row.pop("labels") or {}
            if not isinstance(labels, dict):
                parsed.rejections.append(Rejection(row["source_line"], "labels.object", "labels is not an object"))
                continue
            for key, column in _LABEL_COLUMNS.items():
                value = labels.get(key)
                row[column] = None if value is None else str(value)
            state = row.get("state")
            if isinstance(state, str):
                row["state"] = _K8S_STATES.get(state.lower(), state.upper())
            kept.append(row)
        parsed.rows[:] = kept

    return parse


_REQUEST_FIELDS = ("request_id", "requested_at", "model", "tenant", "business_line", "input_tokens", "output_tokens",
                   "cache_hit", "latency_ms", "latency_tier", "status", "task_id", "attempt", "escalated_to",
                   "human_handoff")
_LITELLM_FIELDS = ("startTime", "endTime", "prompt_tokens", "completion_tokens", "team_id", "end_user", "metadata")
_LITELLM_STATUS = {"success": "completed", "failure": "failed"}


def _flag(value: object) -> object:
    """LiteLLM writes cache_hit as "True"/"False"/"" text; booleans pass through."""
    if isinstance(value, str):
        return {"true": True, "false": False, "": False, "none": False}.get(value.strip().lower(), value)
    return False if value is None else value


def request_row(row: dict[str, object]) -> dict[str, object]:
    """One request in the native shape, or a LiteLLM spend-log row mapped into it."""
    if row.get("requested_at") is not None or row.get("startTime") is None:
        mapped = {name: row.get(name) for name in _REQUEST_FIELDS}
        mapped["requested_at"] = utc_naive(mapped["requested_at"])
        mapped["cache_hit"] = _flag(mapped["cache_hit"])
        mapped["human_handoff"] = _flag(mapped["human_handoff"])
        mapped["request_shape"] = "native"
        return mapped
    metadata = row.get("metadata")
    for _ in range(2):   # a JSON object, its text, or (through Parquet's JSON type) that text quoted again
        if isinstance(metadata, str):
            try:
                metadata = json.loads(metadata)
            except json.JSONDecodeError:
                metadata = None
    metadata = metadata if isinstance(metadata, dict) else {}
    started, ended = utc_naive(row.get("startTime")), utc_naive(row.get("endTime"))
    latency = (int((ended - started).total_seconds() * 1000)
               if isinstance(started, datetime) and isinstance(ended, datetime) else None)
    status = row.get("status") or metadata.get("status") or "success"
    return {
        "request_id": row.get("request_id"), "requested_at": started, "model": row.get("model"),
        "tenant": row.get("team_id"), "business_line": metadata.get("business_line"),
        "input_tokens": row.get("prompt_tokens"), "output_tokens": row.get("completion_tokens"),
        "cache_hit": _flag(row.get("cache_hit")), "latency_ms": latency, "latency_tier": None,
        "status": _LITELLM_STATUS.get(str(status).lower(), str(status).lower()),
        "task_id": metadata.get("task_id"), "attempt": metadata.get("attempt", 1),
        "escalated_to": metadata.get("escalated_to"), "human_handoff": _flag(metadata.get("human_handoff")),
        "request_shape": "litellm", "source_line": row.get("source_line"),
    }


def request_line_parser() -> LineParser:
    """Requests as JSON Lines, native or LiteLLM spend-log shaped, row by row."""
    read_json = jsonl_line_parser((*_REQUEST_FIELDS, *_LITELLM_FIELDS))

    def parse(lines: list[str], parsed: ParsedFile) -> None:
        read_json(lines, parsed)
        parsed.rows[:] = [dict(request_row(row), source_line=row["source_line"]) for row in parsed.rows]

    return parse


@dataclass(frozen=True)
class Source:
    name: str
    folder: str
    patterns: tuple[str, ...]
    schema: Callable[[Contract], s.SourceSchema]
    parser: Callable[[s.SourceSchema], LineParser]
    parquet_row: Callable[[dict[str, object]], dict[str, object]] | None = None   # set when Parquet is accepted

    def files(self, landing_dir: Path) -> list[Path]:
        return landing_files(landing_dir, self.folder, self.patterns)


def _csv(schema: s.SourceSchema) -> LineParser:
    return csv_line_parser(c.name for c in schema.columns if not c.nullable)


def _csv_all_columns(schema: s.SourceSchema) -> LineParser:
    """A CSV whose header must name every column, even those whose values may be blank."""
    return csv_line_parser(c.name for c in schema.columns)


def _jsonl(schema: s.SourceSchema) -> LineParser:
    return jsonl_line_parser(c.name for c in schema.columns)


def sources(sacct: SacctOptions = SacctOptions(), focus_tag_key: str = "batch_id") -> dict[str, Source]:
    """Every small source by raw table name."""
    return {
        src.name: src for src in (
            Source("batch_registry", "registry", ("batches*.csv",), s.batch_registry, _csv),
            Source("scheduler_jobs", "scheduler", ("*.sacct", "*.txt", "*.psv"), s.scheduler_jobs,
                   lambda _schema: sacct_line_parser(sacct)),
            Source("scheduler_events", "scheduler", ("*.jsonl",), s.scheduler_events,
                   lambda _schema: job_event_line_parser()),
            Source("training_steps", "steps", ("*.jsonl",), s.training_steps, _jsonl),
            Source("ledger_purchases", "ledger", ("purchases*.csv",), s.ledger_purchases, _csv),
            Source("ledger_facility", "ledger", ("facility*.csv",), s.ledger_facility, _csv),
            Source("serving_requests", "requests", ("*.jsonl", "*.parquet"), s.serving_requests,
                   lambda _schema: request_line_parser(), parquet_row=request_row),
            Source("serving_replicas", "serving", ("replicas*.csv",), s.serving_replicas, _csv),
            Source("serving_monthly_costs", "serving", ("monthly_costs*.csv",), s.serving_monthly_costs, _csv),
            Source("task_outcomes", "tasks", ("outcomes*.csv",), s.task_outcomes, _csv),
            Source("billing_focus", "billing", ("*.csv", "*.parquet"), s.billing_focus,
                   lambda _schema: focus_line_parser(focus_tag_key),
                   parquet_row=lambda row: focus_row(row, focus_tag_key)),
            Source("storage_prefix_rules", "storage", ("prefix_rules*.csv",), s.storage_prefix_rules,
                   _csv_all_columns),
            Source("storage_prices", "storage", ("storage_prices*.csv",), s.storage_prices, _csv),
            Source("batch_rounds", "registry", ("rounds*.csv",), s.batch_rounds, _csv),
            Source("timesheets", "timesheets", ("*.csv",), s.timesheets, lambda _schema: harvest_line_parser()),
            Source("service_invoices", "services", ("*.csv",), s.service_invoices, _csv),
        )
    }


def load_source(con: duckdb.DuckDBPyConnection, landing_dir: Path, source: Source,
                contract: Contract) -> IngestReport:
    """Parse, validate and write every file of one source; the night goes on whatever one file holds."""
    schema = source.schema(contract)
    parser = source.parser(schema)
    results: list[tuple[ParsedFile, object]] = []
    for path in source.files(landing_dir):
        if path.suffix == ".parquet" and source.parquet_row is not None:
            parsed = parse_parquet(path, source.parquet_row)
        else:
            parsed = parse_file(path, parser)
        results.append((parsed, validate_rows(parsed, schema, con)))
    return write_validated_source(con, schema, landing_dir, results)


def load_named(con: duckdb.DuckDBPyConnection, landing_dir: Path, name: str, contract: Contract,
               sacct: SacctOptions = SacctOptions(), focus_tag_key: str = "batch_id") -> IngestReport:
    """Load one source by its raw table name, on whichever path it takes (in DuckDB, or ``load_source``)."""
    if name in IN_DATABASE:
        return IN_DATABASE[name](con, landing_dir)
    return load_source(con, landing_dir, sources(sacct, focus_tag_key)[name], contract)


def load_sources(con: duckdb.DuckDBPyConnection, landing_dir: Path, contract: Contract,
                 names: Sequence[str] | None = None) -> list[IngestReport]:
    """Load the named sources (every source, small and large, unless told)."""
    return [load_named(con, landing_dir, n, contract) for n in (names or [*sources(), *IN_DATABASE])]
