"""The small landing sources: where their files live, how a line becomes a row, which schema checks it.

Each source is a ``Source`` value; ``load_source`` is the one loader they share. Device samples, the
large source, load inside DuckDB instead (``telemetry.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from cost_pipeline.contract import Contract
from cost_pipeline.contract import schemas as s
from cost_pipeline.ingest.records import (
    FileRejected,
    ParsedFile,
    Rejection,
    csv_line_parser,
    jsonl_line_parser,
    parse_file,
)
from cost_pipeline.ingest.validate import validate_rows
from cost_pipeline.ingest.warehouse import IngestReport, write_validated_source
from cost_pipeline.parsing import slurm

LineParser = Callable[[list[str], ParsedFile], None]


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


@dataclass(frozen=True)
class Source:
    name: str
    folder: str
    patterns: tuple[str, ...]
    schema: Callable[[Contract], s.SourceSchema]
    parser: Callable[[s.SourceSchema], LineParser]

    def files(self, landing_dir: Path) -> list[Path]:
        folder = landing_dir / self.folder
        found = {p for pattern in self.patterns for p in folder.glob(pattern) if p.is_file()}
        return sorted(found)


def _csv(schema: s.SourceSchema) -> LineParser:
    return csv_line_parser(c.name for c in schema.columns if not c.nullable)


def _jsonl(schema: s.SourceSchema) -> LineParser:
    return jsonl_line_parser(c.name for c in schema.columns)


def sources(sacct: SacctOptions = SacctOptions()) -> dict[str, Source]:
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
        )
    }


def load_source(con: duckdb.DuckDBPyConnection, landing_dir: Path, source: Source,
                contract: Contract) -> IngestReport:
    """Parse, validate and write every file of one source; the night goes on whatever one file holds."""
    schema = source.schema(contract)
    parser = source.parser(schema)
    results: list[tuple[ParsedFile, object]] = []
    for path in source.files(landing_dir):
        parsed = parse_file(path, parser)
        results.append((parsed, validate_rows(parsed, schema)))
    return write_validated_source(con, schema, landing_dir, results)


def load_sources(con: duckdb.DuckDBPyConnection, landing_dir: Path, contract: Contract,
                 names: Sequence[str] | None = None) -> list[IngestReport]:
    table = sources()
    return [load_source(con, landing_dir, table[n], contract) for n in (names or list(table))]
