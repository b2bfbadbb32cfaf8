"""Hostile file names and values (issue 5, "inputs that fight back"): quotes, ``;``, ``--``, newlines, ``..``,
spaces, unicode, glob characters and SQL fragments, in landing file names (registry CSV, sacct, telemetry CSV,
steps JSONL) and in values (registry attributes, sacct job names and ``Comment`` labels, telemetry host names,
step versions).

The landing folder is loaded twice: through the real ingest on a locked-down connection, and once through the
nightly job (``run_pipeline``: Dagster and dbt) on a copy of the demo's night, the hostile files added beside its own:
every asset that reads a folder holding them (``HOSTILE_FOLDERS_SOURCES``) and everything downstream of those, the
rest as the demo's night left it. Both show 0 side effects:

- no table is dropped or created outside the known ones: ``information_schema.tables`` after the ingest is the
  raw tables the loaders own, and after the nightly job it is still exactly the list a clean run of the demo produces;
- no file is created outside the test's temporary folders (the files an injected ``COPY ... TO`` or ``ATTACH``
  would write do not exist, and no path anywhere under the project, the home folder or /tmp is named after a
  hostile string);
- every file name is recorded byte for byte in ``raw.ingested_files``, every hostile value is either stored byte
  for byte or its line is in ``raw.quarantine`` with the rule it broke, and a file reads its own rows only
  (a telemetry file named ``dcgm*.csv`` does not read its neighbours).
"""

from __future__ import annotations

import csv
import io
import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from cost_pipeline.contract import load_contract
from cost_pipeline.contract.schemas import DEVICE_SAMPLE_BASE_COLUMNS, batch_plan_columns
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_source, sources
from cost_pipeline.ingest.scheduler import SACCT_FIELDS, parse_labels
from cost_pipeline.ingest.telemetry import load_device_samples
from tests.helpers import nightly_assets_downstream_of, query

TOKEN = uuid.uuid4().hex[:12]  # names what an injection would create, so it can be looked for
PWNED = f"pwned-{TOKEN}"
OUTSIDE = Path("/tmp") / f"{PWNED}.csv"  # where an injected COPY ... TO would write

# Values: each is stored byte for byte where the column takes free text. None has leading or trailing blanks,
# which the CSV and sacct readers trim by design.
VALUES = [
    "x'); drop table raw.quarantine; --",
    "'; drop schema raw cascade; --",
    "Robert'); DROP TABLE raw.ingested_files;--",
    '" or ""="',
    "a;b;c -- not a comment",
    "/* block */ select 1",
    "line one\nline two",
    "carriage\r\nreturn and a lone\rone",
    "../../../etc/passwd",
    "..",
    "with spaces  and\ta tab",
    "café é",
    "批次 訓練",
    "🙂🚀 emoji",
    'O\'Brien said "hi"',
    "$(touch " + PWNED + ")",
    "`id` && id",
    "%s %d {0} {{ var('x') }} {% raw %}",
    "\\N",
    "NULL",
    f"x'); copy (select 42) to '{OUTSIDE}'; --",
    f"'; attach '/tmp/{PWNED}.duckdb' as p; --",
    "Ω≈ç√∫˜µ≤ ‮right-to-left‮",
    "zero\u200bwidth and \u2028 separator",
]
# File name parts: the same, where a file name can hold them ("/" and NUL cannot be in a Linux file name).
NAMES = [
    " x'); drop table raw.quarantine; --",
    " '; drop schema raw cascade; --",
    ' " or ""="',
    "\nnew line",
    "..",
    " .. spaces ..",
    " é 批次 🙂",
    f" $(touch {PWNED})",
    " `id`",
    " %s{0}",
    " \\ back\\slash",
    " [1]",
    "*",
    "?",
    f" '; copy (select 1) to '{PWNED}.csv'; --",
    " -- comment",
]
SAMPLE_HEADER = [name for name, _ in DEVICE_SAMPLE_BASE_COLUMNS]
# The plan columns, blank on every hostile batch: a registry's header names them all.
PLAN_COLUMNS = [column.name for column in batch_plan_columns()]
PLAN = [""] * len(PLAN_COLUMNS)
REGISTRY_HEADER = [
    "batch_id",
    "project",
    "goal",
    "team",
    "data_version",
    "model_version",
    "code_version",
    "config_version",
    "contract_version",
    *PLAN_COLUMNS,
]


@dataclass(frozen=True)
class Stored:
    """A value expected in ``raw.<source>.<column>`` at (file, line), exactly as written."""

    source: str
    source_file: str
    line: int
    column: str
    value: str


@dataclass(frozen=True)
class Quarantined:
    """A line expected in ``raw.quarantine`` with the rule it broke."""

    source: str
    source_file: str
    line: int
    rule: str


@dataclass
class Hostile:
    landing: Path
    files: dict[str, list[str]]  # source -> landing-relative names of the hostile files
    rows: dict[tuple[str, str], int]  # (source, file) -> rows it holds
    stored: list[Stored]
    quarantined: list[Quarantined]


def _csv_text(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _write(landing: Path, relative: str, text: str) -> None:
    path = landing / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def write_hostile_files(landing: Path) -> Hostile:
    """Add hostile files to ``landing`` (next to whatever is there) and say what each line must become."""
    hostile = Hostile(landing, {}, {}, [], [])

    def add(source: str, relative: str, text: str, rows: int) -> None:
        _write(landing, relative, text)
        hostile.files.setdefault(source, []).append(relative)
        hostile.rows[(source, relative)] = rows

    # Registry: per file one batch whose every attribute is hostile text (stored), and one hostile key.
    for n, name in enumerate(NAMES[:8]):
        relative = f"registry/batches{name}.csv"
        attributes = [VALUES[(n + k) % len(VALUES)] for k in range(7)]
        add(
            "batch_registry",
            relative,
            _csv_text([REGISTRY_HEADER, [f"H-{n}", *attributes, "v1", *PLAN], [VALUES[n], *attributes, "v1", *PLAN]]),
            2,
        )
        stored_line = _end_line(2, attributes)  # quoted values keep their line ends
        for column, value in zip(REGISTRY_HEADER[1:8], attributes, strict=True):
            hostile.stored.append(Stored("batch_registry", relative, stored_line, column, value))
        hostile.quarantined.append(
            Quarantined(
                "batch_registry", relative, _end_line(stored_line + 1, [VALUES[n], *attributes]), "batch_id.str_matches"
            )
        )

    # sacct: hostile job names, accounts and users (stored), labels in Comment (stored as the label grammar
    # reads them), an enumerated label out of its list, a "|" and a line end inside a job name (quarantined).
    header = "|".join(SACCT_FIELDS)
    for n, name in enumerate(NAMES[8:12]):
        relative = f"scheduler/sacct{name}.txt"
        lines = [header]
        for k in range(4):
            value = VALUES[(4 * n + k) % len(VALUES)].replace("|", "/").replace("\n", " ").replace("\r", " ")
            comment = f"batch=H-{n};phase=exploration;reason=planned_experiment;restart_of={value}"
            lines.append(
                _sacct_line(f"{9000 + 10 * n + k}", job_name=value, account=value, user=value, comment=comment)
            )
            line = len(lines)
            hostile.stored += [
                Stored("scheduler_jobs", relative, line, "job_name", value),
                Stored("scheduler_jobs", relative, line, "account", value),
                Stored("scheduler_jobs", relative, line, "user_name", value),
                Stored("scheduler_jobs", relative, line, "restart_of", parse_labels(comment)["restart_of"]),
            ]
        lines.append(_sacct_line(f"{9000 + 10 * n + 5}", comment=f"batch=H-{n};end_reason={VALUES[0]}"))
        hostile.quarantined.append(Quarantined("scheduler_jobs", relative, len(lines), "end_reason.isin"))
        lines.append(_sacct_line(f"{9000 + 10 * n + 6}", job_name="a|b'); drop table raw.quarantine; --"))
        hostile.quarantined.append(Quarantined("scheduler_jobs", relative, len(lines), "sacct_field_count"))
        lines += _sacct_line(f"{9000 + 10 * n + 7}", job_name="first\nsecond").split("\n")
        hostile.quarantined += [
            Quarantined("scheduler_jobs", relative, len(lines) - 1, "sacct_field_count"),
            Quarantined("scheduler_jobs", relative, len(lines), "sacct_field_count"),
        ]
        add("scheduler_jobs", relative, "\n".join(lines) + "\n", 8)

    # Telemetry: hostile file names (glob characters among them) with hostile host names (stored, quoted where
    # CSV needs it) and a hostile gpu (quarantined).
    for n, name in enumerate(NAMES[12:] + NAMES[:2]):
        relative = f"telemetry/dcgm{name}.csv"
        hosts = [VALUES[(2 * n + k) % len(VALUES)] for k in range(2)]
        rows = [SAMPLE_HEADER]
        rows += [
            [f"2026-11-20T0{k}:00:00", host, "0", "no-such-job", "0.5", "0.5", "0.5", "1", "1", "100"]
            for k, host in enumerate(hosts)
        ]
        rows.append(["2026-11-20T05:00:00", "gpu-z", VALUES[n], "no-such-job", "0.5", "0.5", "0.5", "1", "1", "100"])
        add("device_samples", relative, _csv_text(rows), 3)
        # DuckDB numbers lines without counting a line end inside a quoted value.
        hostile.stored += [Stored("device_samples", relative, 2 + k, "hostname", host) for k, host in enumerate(hosts)]
        hostile.quarantined.append(Quarantined("device_samples", relative, 4, "gpu.index"))

    # Steps: hostile versions (stored, JSON escapes and all), a hostile discard reason and batch key (quarantined).
    for n, name in enumerate(NAMES[2:6]):
        relative = f"steps/steps{name}.jsonl"
        step = {
            "batch_id": f"H-{n}",
            "job_id": "no-such-job",
            "started_at": "2026-11-20T00:00:00",
            "ended_at": "2026-11-20T00:10:00",
            "committed": False,
            "discarded_reason": None,
        }
        lines = []
        for k in range(3):
            value = VALUES[(3 * n + k) % len(VALUES)]
            lines.append(
                json.dumps(
                    dict(step, step=k + 1, config_version=value, data_version=value + "\x00"), ensure_ascii=k % 2 == 0
                )
            )
            hostile.stored += [
                Stored("training_steps", relative, k + 1, "config_version", value),
                Stored("training_steps", relative, k + 1, "data_version", value + "\x00"),
            ]
        lines.append(json.dumps(dict(step, step=9, discarded_reason=VALUES[n])))
        hostile.quarantined.append(Quarantined("training_steps", relative, 4, "discarded_reason.isin"))
        lines.append(json.dumps(dict(step, step=10, batch_id=VALUES[n + 1])))
        hostile.quarantined.append(Quarantined("training_steps", relative, 5, "batch_id.str_matches"))
        add("training_steps", relative, "\n".join(lines) + "\n", 5)
    return hostile


def _end_line(first: int, values: list[str]) -> int:
    """The line a CSV record starting on ``first`` ends on: quoted values keep their line ends."""
    text = "".join(values)
    return first + text.count("\r\n") + text.replace("\r\n", "").count("\r") + text.replace("\r\n", "").count("\n")


def _sacct_line(
    job_id: str, job_name: str = "h", account: str = "post-training", user: str = "trainer", comment: str = ""
) -> str:
    values = {field: "" for field in SACCT_FIELDS}
    values.update(
        {
            "JobID": job_id,
            "JobIDRaw": job_id,
            "JobName": job_name,
            "Account": account,
            "Partition": "gpu",
            "User": user,
            "State": "COMPLETED",
            "ExitCode": "0:0",
            "Restarts": "0",
            "Submit": "2026-11-20T00:00:00",
            "Eligible": "2026-11-20T00:00:00",
            "Start": "2026-11-20T00:00:00",
            "End": "2026-11-20T01:00:00",
            "Elapsed": "01:00:00",
            "Timelimit": "02:00:00",
            "NNodes": "1",
            "NodeList": "gpu-z",
            "ReqTRES": "gres/gpu=1",
            "AllocTRES": "gres/gpu=1",
            "Comment": comment,
        }
    )
    return "|".join(values[field] for field in SACCT_FIELDS)


# ------------------------------------------------------------------------------------------------ assertions


def _tables(warehouse: Path) -> set[tuple[str, str, str]]:
    return set(query(warehouse, "select table_schema, table_name, table_type from information_schema.tables"))


def _check_files_are_recorded_by_name(warehouse: Path, hostile: Hostile) -> None:
    for source, names in hostile.files.items():
        recorded = query(
            warehouse,
            "select source_file, rows_in, rows_staged, rows_quarantined, duplicate_of "
            "from raw.ingested_files where source = ?",
            [source],
        )
        by_name = {row[0]: row[1:] for row in recorded}
        for name in names:
            assert name in by_name, f"{name!r} is not in the ledger under its own name"
            assert name.encode() == next(r for r in by_name if r == name).encode()
            rows_in, staged, quarantined, duplicate_of = by_name[name]
            assert duplicate_of is None
            assert rows_in == staged + quarantined == hostile.rows[(source, name)], name
            raw_rows = query(warehouse, f'select count(*) from raw."{source}" where source_file = ?', [name])[0][0]
            assert raw_rows == staged, f"{name!r}: its raw rows are its own rows"


def _check_values(warehouse: Path, hostile: Hostile) -> None:
    problems = []
    for expected in hostile.stored:
        found = query(
            warehouse,
            f'select "{expected.column}" from raw."{expected.source}" where source_file = ? and source_line = ?',
            [expected.source_file, expected.line],
        )
        if [row[0] for row in found] != [expected.value] or found[0][0].encode() != expected.value.encode():
            problems.append(f"{expected}: found {found!r}")
    for expected in hostile.quarantined:
        rules = [
            r
            for (r,) in query(
                warehouse,
                "select rule from raw.quarantine where source = ? and source_file = ? and line = ?",
                [expected.source, expected.source_file, expected.line],
            )
        ]
        if rules != [expected.rule]:
            problems.append(f"{expected}: quarantined as {rules}")
    assert not problems, "\n".join(problems[:20])
    # Every line of every hostile file is accounted for by the expectations: no hostile row slips through.
    for source, names in hostile.files.items():
        for name in names:
            lines = {
                r[0]
                for r in query(
                    warehouse,
                    f'select source_line from raw."{source}" where source_file = ? '
                    "union all select line from raw.quarantine where source = ? "
                    "and source_file = ?",
                    [name, source, name],
                )
            }
            expected = {
                e.line for e in [*hostile.stored, *hostile.quarantined] if e.source == source and e.source_file == name
            }
            assert lines == expected, (name, sorted(lines), sorted(expected))


def _pwned_paths(tmp_root: Path) -> list[Path]:
    """Paths whose name carries the token only an injection would write: anywhere in the project and the test's
    temporary folder, and at the top of the home folder, the working folder and /tmp (where the hostile
    strings point)."""
    project = Path(__file__).resolve().parents[1]
    found = []
    for root in (project, tmp_root):
        for directory, subdirectories, files in os.walk(root):
            subdirectories[:] = [d for d in subdirectories if d != ".git"]
            found += [Path(directory) / name for name in [*files, *subdirectories] if TOKEN in name]
    for folder in (Path.home(), Path.cwd(), Path("/tmp")):
        found += [p for p in folder.iterdir() if TOKEN in p.name]
    return found


def _no_file_outside(
    tmp_root: Path, landing: Path, before: set[Path], allowed: set[str], beside: Path | None = None
) -> None:
    assert not OUTSIDE.exists()
    assert not Path(f"/tmp/{PWNED}.duckdb").exists()
    # The only names carrying the token are the landing files themselves.
    stray = [p for p in _pwned_paths(tmp_root) if landing not in p.parents]
    assert not stray, stray
    # Next to the landing folder (in ``beside``, ``tmp_root`` unless named): only what a run writes there (the
    # warehouse and the files beside it).
    created = {p.name for p in (beside or tmp_root).iterdir()} - {p.name for p in before}
    assert created <= allowed, created - allowed


# ----------------------------------------------------------------------------------------------------- tests
RAW_SOURCES = ["batch_registry", "scheduler_jobs", "training_steps"]
# The nightly job's assets that read a folder the hostile files are in (registry, scheduler, telemetry, steps): every
# source declared on one of them, whatever its file patterns, and the files no source reads (``raw/ignored_files``,
# which lists the whole landing folder).
HOSTILE_FOLDERS_SOURCES = [
    ("raw", name)
    for name, source in sources().items()
    if source.folder in {"registry", "scheduler", "telemetry", "steps"}
] + [("raw", "ignored_files")]


def test_the_hostile_set_is_hostile_enough():
    assert len(NAMES) >= 16 and len(VALUES) >= 20
    for needle in ("'", '"', ";", "--", "\n", "..", " ", "é", "批次", "🙂"):
        assert any(needle in v for v in VALUES) and any(needle in n for n in NAMES), needle


def test_hostile_names_and_values_through_the_real_ingest(tmp_path):
    landing = tmp_path / "landing"
    hostile = write_hostile_files(landing)
    assert sum(len(names) for names in hostile.files.values()) >= 20
    before = set(tmp_path.iterdir())
    warehouse = tmp_path / "w.duckdb"
    con = connect(warehouse, readable_dir=landing)
    try:
        tables_before = set(
            con.execute("select table_schema, table_name, table_type from information_schema.tables").fetchall()
        )
        contract = load_contract()
        reports = [load_source(con, landing, sources()[name], contract) for name in RAW_SOURCES]
        reports.append(load_device_samples(con, landing))
    finally:
        con.close()
    assert all(report.conserved for report in reports)
    expected_tables = tables_before | {("raw", name, "BASE TABLE") for name in [*RAW_SOURCES, "device_samples"]}
    expected_tables.add(("ops", "loaded_files", "BASE TABLE"))  # the files each in-database source loaded
    assert _tables(warehouse) == expected_tables
    assert tables_before == {
        ("raw", "quarantine", "BASE TABLE"),
        ("raw", "ingested_files", "BASE TABLE"),
        ("raw", "ignored_files", "BASE TABLE"),
        ("raw", "retractions", "BASE TABLE"),
        ("raw", "retraction_batches", "BASE TABLE"),
        ("raw", "source_failures", "BASE TABLE"),
        # When each file's bytes first arrived (cost_pipeline/ingest/lib/arrivals.py): staging reads it for the
        # order of delivery (dbt source ops.file_arrivals), so connect makes it before any load, as the ledger.
        ("ops", "file_arrivals", "BASE TABLE"),
    }
    _check_files_are_recorded_by_name(warehouse, hostile)
    _check_values(warehouse, hostile)
    _no_file_outside(tmp_path, landing, before, {"w.duckdb", "w.duckdb.wal"})


def test_hostile_names_and_values_through_the_nightly_job(tmp_path, demo_run, demo_copy, monkeypatch):
    """The demo's night plus the hostile files, through Dagster and dbt: every asset reading their folders and all
    downstream of those (about three quarters of the night's assets: not the billing, ledger, services, serving,
    storage, tasks, timesheets and contract sources, nor what only they feed)."""
    from cost_pipeline.cli import run_pipeline

    assert demo_run.succeeded, "the clean run this one is compared with failed"
    landing = demo_copy / "landing"
    hostile = write_hostile_files(landing)
    before = set(demo_copy.iterdir())
    warehouse = demo_copy / "warehouse.duckdb"
    assert _tables(warehouse) == set(
        demo_run.query("select table_schema, table_name, table_type from information_schema.tables")
    )
    monkeypatch.setenv("COST_LANDING_DIR", "")  # run_pipeline sets both; they are restored afterwards
    monkeypatch.setenv("COST_WAREHOUSE", "")
    selected = nightly_assets_downstream_of(HOSTILE_FOLDERS_SOURCES)
    assert {"raw/batch_registry", "raw/ignored_files", "marts/dim_batches", "published/marts"} <= set(selected)
    succeeded = run_pipeline(landing, warehouse, asset_keys=list(selected.values()))
    assert succeeded
    clean = set(demo_run.query("select table_schema, table_name, table_type from information_schema.tables"))
    assert _tables(warehouse) == clean
    _check_files_are_recorded_by_name(warehouse, hostile)
    _check_values(warehouse, hostile)
    # The hostile batches reach the marts as data, their text intact.
    registered = dict(query(warehouse, "select batch_id, project from marts.dim_batches"))
    for expected in (e for e in hostile.stored if e.source == "batch_registry" and e.column == "project"):
        batch = query(
            warehouse, "select batch_id from raw.batch_registry where source_file = ?", [expected.source_file]
        )[0][0]
        assert registered[batch] == expected.value
    # What a clean run leaves beside its warehouse (published marts, the run lock), named after this warehouse.
    stem = demo_run.warehouse.stem
    beside_clean = {
        p.name.replace(stem, warehouse.stem, 1) for p in demo_run.warehouse.parent.iterdir() if p.name.startswith(stem)
    }
    _no_file_outside(
        tmp_path,
        landing,
        before,
        beside_clean | {warehouse.name, f"{warehouse.name}.wal", f"{warehouse.name}.lock"},
        beside=demo_copy,
    )
