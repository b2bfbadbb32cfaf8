"""``cost-pipeline run --config FILE``: the run-config YAML that ``dagster job execute -c`` takes, checked up front.

A source's options (``ops: raw__scheduler_jobs: config: {sacct_delimiter: "☃", sacct_fields: [...]}``) are
the same from the CLI, the UI's launchpad and the schedule. The file is checked against the nightly job's config
schema, then each source's options are built as the ingest asset will build them (their own checks run), before
anything runs: a wrong option name or value is one line naming the op and the field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from cost_pipeline.ingest.registry import SOURCES

_AT_PATH = re.compile(r" at (?:path root\S*|the root)")


class RunConfigError(ValueError):
    """The run config is wrong; the message is one line, naming where."""


def read_run_config(path: Path) -> dict[str, Any]:
    """The YAML mapping in ``path``."""
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise RunConfigError(f"{path}: cannot be read ({error.strerror})") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise RunConfigError(f"{path}{where}: not valid YAML") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise RunConfigError(f"{path}: should hold a mapping such as ops: {{raw__scheduler_jobs: {{config: ...}}}}")
    return loaded


def _source_of(op: str):
    return SOURCES.get(op.removeprefix("raw__")) if op.startswith("raw__") else None


def _describe(error: Any) -> str:
    """One dagster config evaluation error as one line: the path, what is wrong, the options the place takes."""
    names = [entry.field_name for entry in error.stack.entries if hasattr(entry, "field_name")]
    text = _AT_PATH.sub("", error.message.split(" Expected:")[0].splitlines()[0]).rstrip(".:")
    where = ".".join(names) or "the top level"
    if len(names) == 3 and names[0] == "ops" and names[2] == "config" and (source := _source_of(names[1])):
        options = ", ".join(source.option_names()) or "none"
        text += f" (options of {names[1]}: {options})"
    elif names == ["ops"]:
        text += " (a source's op is raw__<raw table>, e.g. raw__scheduler_jobs)"
    return f"{where}: {text}"


def _check_options(run_config: dict[str, Any]) -> None:
    """Build each configured source's options as its asset will, so their own checks run now."""
    for op, entry in (run_config.get("ops") or {}).items():
        source = _source_of(op)
        if source is None or source.options is None or not isinstance(entry, dict):
            continue
        try:
            source.options(**(entry.get("config") or {}))
        except (TypeError, ValueError) as error:
            raise RunConfigError(f"ops.{op}.config: {error}") from None


def check_run_config(job: Any, run_config: dict[str, Any]) -> None:
    """Raise ``RunConfigError`` (one line) unless ``run_config`` is valid for ``job``."""
    import dagster as dg

    try:
        dg.validate_run_config(job, run_config)
    except dg.DagsterInvalidConfigError as invalid:
        errors = list(invalid.errors) or [None]
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        first = _describe(errors[0]) if errors[0] is not None else str(invalid).splitlines()[0]
        raise RunConfigError(first + more) from None
    _check_options(run_config)
