"""Fuzzed landing files through the real ingest (issue 5, "inputs that fight back").

For each format (CSV: the batch registry and the purchase ledger; JSONL: training steps and serving requests;
sacct: scheduler jobs; device-sample CSV: telemetry, checked inside DuckDB; FOCUS: a provider's billing export,
Tags JSON and all; S3 Inventory CSV with a header, URL-encoded keys, checked inside DuckDB), a seeded generator
writes 500
malformed files into one landing folder, starting from the demo's valid rows and mutating them: truncated
lines, extra and missing delimiters, random bytes (NUL, invalid UTF-8), BOM, CRLF, empty and header-only files,
wrong headers, huge fields, unbalanced quotes, numbers as words, malformed dates, negative and huge numbers,
JSON that is not an object, deeply nested JSON, duplicated keys, values of the wrong type and more.

Each folder is loaded once, on a locked-down connection, through the real loaders. For every file in
``raw.ingested_files`` (500/500):

- rows in = rows staged + rows quarantined;
- the raw table holds exactly ``rows_staged`` rows of that file, and ``raw.quarantine`` exactly
  ``rows_quarantined`` lines of it, unless the file was refused whole (``refused_whole``): then the quarantine holds
  its one line-0 row and the ledger counts every record it held (at least 1) as in and quarantined; a duplicate
  (``duplicate_of`` set) has all three at zero and no rows;
- no line is counted twice: staged and quarantined line numbers are distinct within a file, and a whole-file
  rejection (line 0) is the file's only quarantine row.

No load may raise. The generator is deterministic (fixed seed), so a failure names a file that can be rebuilt.
"""

from __future__ import annotations

import codecs
import json
import multiprocessing
import random
import re
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import unquote_plus

import duckdb
import pytest

from cost_pipeline.contract import load_contract
from cost_pipeline.demo import write_demo_landing
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_named
from tests.helpers import REGISTRY_HEADER, query

# One worker runs this whole module: the module-scoped ``outcomes`` loads every selected source once (two processes
# of its own), and a second worker would load them all again.
pytestmark = pytest.mark.xdist_group("fuzz_ingest")

SEED = 20261105
FILES_PER_FORMAT = 500


@dataclass(frozen=True)
class Format:
    source: str  # raw table, and the source in raw.ingested_files
    format: str  # the format: csv, jsonl, sacct, device-sample csv
    folder: str
    file_name: str  # with one {} for the file number; matches the source's glob
    seed_file: str  # the demo file whose rows seed the generator
    kind: str  # how lines are mutated: csv | jsonl | sacct
    files: int  # how many files this source gets; a format's sources add up to 500
    key: str  # the header field (or JSON key) a staged row is traced back to its line by
    delimiter: str = ","


FORMATS = (
    Format("batch_registry", "csv", "registry", "batches_{:03d}.csv", "registry/batches.csv", "csv", 250, "batch_id"),
    Format(
        "ledger_purchases", "csv", "ledger", "purchases_{:03d}.csv", "ledger/purchases.csv", "csv", 250, "purchase_id"
    ),
    Format("training_steps", "jsonl", "steps", "steps_{:03d}.jsonl", "steps/steps.jsonl", "jsonl", 250, "step"),
    Format(
        "serving_requests",
        "jsonl",
        "requests",
        "requests_{:03d}.jsonl",
        "requests/requests_2026-11.jsonl",
        "jsonl",
        250,
        "request_id",
    ),
    Format(
        "scheduler_jobs",
        "sacct",
        "scheduler",
        "sacct_{:03d}.txt",
        "scheduler/sacct_2026-11.txt",
        "sacct",
        500,
        "JobID",
        "|",
    ),
    Format(
        "device_samples",
        "device-sample csv",
        "telemetry",
        "dcgm_{:03d}.csv",
        "telemetry/dcgm_b7.csv",
        "csv",
        500,
        "timestamp",
    ),
    Format(
        "billing_focus",
        "focus",
        "billing",
        "focus_{:03d}.csv",
        "billing/aws_focus_2026-11.csv",
        "csv",
        500,
        "ResourceId",
    ),
    Format(
        "storage_inventory",
        "s3 inventory csv",
        "storage",
        "inv_2026-11-30_{:03d}.csv",
        "storage/ml-prod_inventory_2026-11-23.csv",
        "csv",
        500,
        "Key",
    ),
)
BY_SOURCE = {f.source: f for f in FORMATS}
# How a staged row's key reads in its raw table, to compare with the text on the line it claims to come from.
STAGED_KEY = {
    "batch_registry": "batch_id",
    "ledger_purchases": "purchase_id",
    "training_steps": "cast(step as varchar)",
    "serving_requests": "request_id",
    "scheduler_jobs": "job_id",
    "device_samples": "strftime(\"timestamp\", '%Y-%m-%dT%H:%M:%S')",
    "billing_focus": "coalesce(resource_id, '')",  # FOCUS writes a missing value as empty or "null"
    "storage_inventory": "object_key",
}


# Extra valid rows where the demo has few, so files can hold several distinct rows.
# Registry rows follow the demo's header: the registry's attributes, the plan (blank on every third row), the contract
# version.
_EXTRA_REGISTRY = [
    f"B-{n},proj-{n},goal {n},team-{n % 3},d{n},m{n},c{n},cfg{n},"
    + (",,,," if n % 3 == 0 else f"{100 * n}.00,{n}.5,{1 + n % 4},stop rule {n},{n % 20}")
    + ",v1"
    for n in range(10, 20)
]
_EXTRA_PURCHASES = [
    f"P-{n:03d},2026-0{1 + n % 9}-15,{('gpu_server', 'network', 'storage', 'other')[n % 4]},"
    f"item {n},{1 + n % 4},{1000 * n}.50,USD,{8 if n % 4 == 0 else 0},{3 + n % 3},{10 * n}.00"
    for n in range(2, 12)
]
# FOCUS lines in the demo export's columns. The demo's tagged lines quote their Tags JSON, and a quoted file cannot be
# traced line by line; these untagged lines keep most files quote-free (a tag is still mutated in where one is).
_EXTRA_FOCUS = [
    f"123456789012,2026-11-01T00:00:00Z,2026-12-01T00:00:00Z,2026-11-{1 + n:02d}T00:00:00Z,"
    f"2026-11-{2 + n:02d}T00:00:00Z,Usage,{'Correction' if n % 5 == 0 else ''},line {n},Usage-Based,"
    f"Standard,{3 * n}.50,{3 * n}.50,{2 * n}.25,{2 * n}.25,USD,INV-{n},i-0{n:04x},i-0{n:04x},"
    f"{('Compute', 'Storage', 'Networking')[n % 3]},Service {n},SKU-{n},{n},Hours,,AWS,AWS,AWS,cc-{n}"
    for n in range(1, 13)
]
# Inventory lines in the earlier demo inventory's header CSV columns; AWS URL-encodes the keys (+ is a space).
_EXTRA_INVENTORY = [
    f"ml-prod,{('raw', 'checkpoints', 'logs')[n % 3]}/b{n}/step+{n}%2B{n}%20x.bin,{n * 1024},"
    f"2026-11-{1 + n:02d}T00:00:00.000Z,etag{n:04d},{('STANDARD', 'GLACIER')[n % 2]}"
    for n in range(1, 13)
]

# ---------------------------------------------------------------------------------------------- value pools
WORD_NUMBERS = [
    "twelve",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "1e309",
    "1,000",
    "1 000",
    "0x1F",
    "١٢",
    "²",
    "½",
    "1_000",
    "",
    " ",
    "null",
    "None",
    "true",
    "12abc",
    "--1",
    "+-3",
    "1e",
    ".",
    "-0",
    "0.0.1",
]
HUGE_NUMBERS = [
    "99999999999999999999999999",
    "-99999999999999999999999999",
    "9223372036854775808",
    "2147483648",
    "1e400",
    "-1e400",
    "4294967296",
    "18446744073709551616",
    "1" * 400,
]
BAD_DATES = [
    "2026-13-45T99:00:00",
    "2026-02-30",
    "2026-11-31T00:00:00",
    "yesterday",
    "2026/11/02 08:00",
    "0000-00-00T00:00:00",
    "99999-01-01T00:00:00",
    "2026-11-02T08:00:00+99:00",
    "2026-11-02T25:61:61",
    "1970-01-01T00:00:00Z",
    "2026-11-02 08:00:00.1234567890123",
    "-2026-11-02",
    "T",
    "2026-W45-1",
    "2026-11-02T08:00:00+05:30",
    "1e10",
    "Unknown",
    "None",
    "٢٠٢٦-١١-٠٢",
]
ODD_TEXT = [
    "é",
    "批次",
    "🙂",
    "\u200b",
    "\u202e",
    "\ufeff",
    "'; drop table raw.quarantine; --",
    "\\",
    "\\N",
    "NULL",
    "\t",
    "a\x0bb",
    "\x1f",
    "\x7f",
    "%s",
    "{}",
    "${x}",
    "\\u0000",
    "x" * 300,
]
JSON_VALUES: list[object] = [
    None,
    "",
    [],
    {},
    [1, 2],
    {"a": 1},
    "twelve",
    -1,
    -0.5,
    1.5,
    1e308,
    10**30,
    -(10**30),
    2**63,
    2**31,
    True,
    False,
    "2026-13-45",
    "nan",
    0,
    "-7",
    "1e400",
    "\ud800",
    "\udfff",
    "\u0000",
    "é批次🙂",
    "x" * 5000,
]


def _nested(depth: int) -> object:
    value: object = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


# --------------------------------------------------------------------------------------------- line mutations
Lines = list[str]


def _pick(rng: random.Random, lines: Lines, with_header: bool = False) -> int:
    first = 0 if with_header or len(lines) == 1 else 1
    return rng.randrange(first, len(lines))


def _truncate(rng, lines, fmt):
    i = _pick(rng, lines, with_header=rng.random() < 0.1)
    lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]


def _extra_delimiter(rng, lines, fmt):
    i = _pick(rng, lines, with_header=rng.random() < 0.1)
    at = rng.randrange(len(lines[i]) + 1)
    lines[i] = lines[i][:at] + fmt.delimiter * rng.randint(1, 3) + lines[i][at:]


def _missing_delimiter(rng, lines, fmt):
    i = _pick(rng, lines, with_header=rng.random() < 0.1)
    positions = [p for p, c in enumerate(lines[i]) if c == fmt.delimiter]
    if positions:
        p = rng.choice(positions)
        lines[i] = lines[i][:p] + lines[i][p + 1 :]


def _quote(rng, lines, fmt):
    i = _pick(rng, lines, with_header=rng.random() < 0.1)
    at = rng.randrange(len(lines[i]) + 1)
    lines[i] = lines[i][:at] + rng.choice(['"', "'", '""', '"\n', '"x"y', '\\"']) + lines[i][at:]


def _duplicate_line(rng, lines, fmt):
    i = _pick(rng, lines, with_header=rng.random() < 0.2)
    lines.insert(rng.randrange(1, len(lines) + 1), lines[i])


def _delete_line(rng, lines, fmt):
    if len(lines) > 1:
        del lines[_pick(rng, lines, with_header=rng.random() < 0.2)]


def _blank_lines(rng, lines, fmt):
    lines.insert(rng.randrange(len(lines) + 1), rng.choice(["", " ", "\t", fmt.delimiter * 3, "  \t "]))


def _shuffle(rng, lines, fmt):
    rng.shuffle(lines)  # the header may land anywhere


def _control_char(rng, lines, fmt):
    i = _pick(rng, lines, with_header=rng.random() < 0.1)
    at = rng.randrange(len(lines[i]) + 1)
    lines[i] = (
        lines[i][:at] + rng.choice(["\r", "\x00", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\x1a"]) + lines[i][at:]
    )


def _fields_op(transform: Callable[[random.Random, str], str]):
    """Replace one field of one data line (delimited formats; JSON lines are mutated as JSON instead)."""

    def op(rng, lines, fmt):
        i = _pick(rng, lines)
        values = lines[i].split(fmt.delimiter)
        j = rng.randrange(len(values))
        values[j] = transform(rng, values[j])
        lines[i] = fmt.delimiter.join(values)

    return op


def _numeric_field_op(transform: Callable[[random.Random, str], str]):
    """Replace a field that looks numeric (any field when none does)."""

    def op(rng, lines, fmt):
        i = _pick(rng, lines)
        values = lines[i].split(fmt.delimiter)
        numeric = [j for j, v in enumerate(values) if v.strip().lstrip("-").replace(".", "", 1).isdigit()]
        j = rng.choice(numeric) if numeric else rng.randrange(len(values))
        values[j] = transform(rng, values[j])
        lines[i] = fmt.delimiter.join(values)

    return op


def _date_field_op(rng, lines, fmt):
    i = _pick(rng, lines)
    values = lines[i].split(fmt.delimiter)
    dated = [j for j, v in enumerate(values) if v[:2] == "20" and "-" in v]
    j = rng.choice(dated) if dated else rng.randrange(len(values))
    values[j] = rng.choice(BAD_DATES)
    lines[i] = fmt.delimiter.join(values)


def _wrong_header(rng, lines, fmt):
    names = lines[0].split(fmt.delimiter)
    choice = rng.randrange(5)
    if choice == 0:
        names[rng.randrange(len(names))] = rng.choice(["", "x", "JobId", "batch id", "é", "BATCH_ID", '"batch_id'])
    elif choice == 1:
        del names[rng.randrange(len(names))]
    elif choice == 2:
        names.append(names[rng.randrange(len(names))])  # a repeated column name
    elif choice == 3:
        rng.shuffle(names)  # right names, wrong order
    else:
        lines[0] = rng.choice(["id;name;value", "a,b,c", "<html><body>502 Bad Gateway</body></html>", "{}", "|"])
        return
    lines[0] = fmt.delimiter.join(names)


def _huge_field(rng, lines, fmt):
    i = _pick(rng, lines)
    size = rng.choice([1_000, 140_000, 300_000])  # Python's csv refuses fields over 131,072 characters
    filler = rng.choice(["x", "9", "é", '"'])
    if fmt.kind == "jsonl":
        try:
            obj = json.loads(lines[i])
        except (ValueError, RecursionError):
            lines[i] = lines[i] + filler * size
            return
        if isinstance(obj, dict) and obj:
            obj[rng.choice(list(obj))] = filler * size
            lines[i] = json.dumps(obj)
        return
    values = lines[i].split(fmt.delimiter)
    values[rng.randrange(len(values))] = filler * size
    lines[i] = fmt.delimiter.join(values)


# --------------------------------------------------------------------------------------------- JSON mutations
def _json_value(rng, lines, fmt):
    i = _pick(rng, lines, with_header=True)
    try:
        obj = json.loads(lines[i])
    except (ValueError, RecursionError):
        return
    if not isinstance(obj, dict) or not obj:
        return
    key = rng.choice(list(obj))
    roll = rng.random()
    if roll < 0.15:
        obj[key] = _nested(rng.choice([10, 200, 900]))
    elif roll < 0.3:
        obj[key] = rng.choice(BAD_DATES + WORD_NUMBERS + HUGE_NUMBERS)
    else:
        obj[key] = rng.choice(JSON_VALUES)
    lines[i] = json.dumps(obj, ensure_ascii=rng.random() < 0.5)


def _json_drop_key(rng, lines, fmt):
    i = _pick(rng, lines, with_header=True)
    try:
        obj = json.loads(lines[i])
    except (ValueError, RecursionError):
        return
    if isinstance(obj, dict) and obj:
        del obj[rng.choice(list(obj))]
        lines[i] = json.dumps(obj)


def _json_duplicate_key(rng, lines, fmt):
    i = _pick(rng, lines, with_header=True)
    key = rng.choice(["batch_id", "step", "request_id", "requested_at", "committed", "input_tokens", "labels"])
    value = json.dumps(rng.choice(JSON_VALUES))
    text = lines[i]
    if rng.random() < 0.5 and text.startswith("{"):
        lines[i] = "{" + f'"{key}": {value}, ' + text[1:]
    elif text.endswith("}"):
        lines[i] = text[:-1] + f', "{key}": {value}' + "}"


def _json_not_object(rng, lines, fmt):
    i = _pick(rng, lines, with_header=True)
    lines[i] = rng.choice(
        [
            "[1, 2]",
            '"text"',
            "42",
            "null",
            "true",
            "[]",
            "[" + lines[i] + "]",
            "NaN",
            "-Infinity",
            lines[i] + lines[i],
            lines[i] + " trailing",
            "{'single': 'quotes'}",
            "{",
            "}",
            '{"a": 1,}',
            '{"a": 01}',
            '{"a": "\\x41"}',
            '{"a": "\\ud83d"}',
        ]
    )


def _json_deep(rng, lines, fmt):
    i = _pick(rng, lines, with_header=True)
    depth = rng.choice([500, 5_000, 100_000])
    lines[i] = rng.choice(
        [
            "[" * depth + "]" * depth,
            '{"a":' * depth + "1" + "}" * depth,
            '{"batch_id": ' + "[" * depth + "]" * depth + "}",
        ]
    )


# --------------------------------------------------------------------------------------------- the generator
COMMON_OPS = [
    _truncate,
    _extra_delimiter,
    _missing_delimiter,
    _quote,
    _duplicate_line,
    _delete_line,
    _blank_lines,
    _control_char,
    _huge_field,
]
FIELD_OPS = [
    _fields_op(lambda rng, v: rng.choice(ODD_TEXT)),
    _fields_op(lambda rng, v: ""),
    _fields_op(lambda rng, v: f" {v} "),
    _fields_op(lambda rng, v: v.upper() if rng.random() < 0.5 else v.lower()),
    _numeric_field_op(lambda rng, v: rng.choice(WORD_NUMBERS)),
    _numeric_field_op(lambda rng, v: "-" + v.lstrip("-") if v else "-1"),
    _numeric_field_op(lambda rng, v: rng.choice(HUGE_NUMBERS)),
    _date_field_op,
]
JSON_OPS = [_json_value, _json_value, _json_value, _json_drop_key, _json_duplicate_key, _json_not_object, _json_deep]
OPS = {
    "csv": COMMON_OPS + FIELD_OPS + [_wrong_header, _shuffle],
    "sacct": COMMON_OPS + FIELD_OPS + [_wrong_header, _shuffle],
    "jsonl": COMMON_OPS + JSON_OPS,
}


def _bytes_mutations(rng: random.Random, data: bytes) -> bytes:
    if rng.random() < 0.08:
        data = codecs.BOM_UTF8 + data
    if rng.random() < 0.1:
        data = data.replace(b"\n", b"\r\n")
    elif rng.random() < 0.03:
        data = data.replace(b"\n", b"\r")
    if rng.random() < 0.1:
        for _ in range(rng.randint(1, 5)):
            at = rng.randrange(len(data) + 1)
            junk = rng.choice(
                [
                    b"\x00",
                    b"\xff",
                    b"\xfe\xff",
                    b"\xc3(",
                    b"\xe2\x82",
                    b"\x80",
                    b"\xed\xa0\x80",
                    bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))),
                ]
            )
            data = data[:at] + junk + data[at:]
    if rng.random() < 0.05:
        data = data[: rng.randrange(len(data) + 1)]  # cut anywhere, even inside a character
    if rng.random() < 0.02:
        data = data.decode("utf-8", errors="replace").encode(
            rng.choice(["utf-16", "utf-32", "latin-1"]), errors="replace"
        )
    return data


def generate(rng: random.Random, fmt: Format, header: str | None, rows: list[str]) -> bytes:
    """One malformed file: a few of the seed rows, mutated one to four times."""
    roll = rng.random()
    if roll < 0.02:
        return b""
    if roll < 0.04 and header is not None:
        return (header + rng.choice(["\n", "", "\r\n"])).encode()
    if roll < 0.05:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 200)))
    lines: Lines = ([header] if header is not None else []) + rng.sample(rows, rng.randint(1, min(6, len(rows))))
    ops = OPS[fmt.kind]
    for _ in range(rng.randint(1, 4)):
        rng.choice(ops)(rng, lines, fmt)
    text = "\n".join(lines) + rng.choice(["\n", "", "\n\n", "\n \n"])
    return _bytes_mutations(rng, text.encode("utf-8", errors="surrogatepass"))


def seed_rows(demo: Path, fmt: Format) -> tuple[str | None, list[str]]:
    lines = (demo / fmt.seed_file).read_text(encoding="utf-8").splitlines()
    if fmt.kind == "jsonl":
        return None, lines[:200]
    extra = {
        "batch_registry": _EXTRA_REGISTRY,
        "ledger_purchases": _EXTRA_PURCHASES,
        "billing_focus": _EXTRA_FOCUS,
        "storage_inventory": _EXTRA_INVENTORY,
    }.get(fmt.source, [])
    # An extra row must be valid under the seed file's header, or it only adds field-count rejections.
    assert all(len(row.split(fmt.delimiter)) == len(lines[0].split(fmt.delimiter)) for row in extra), fmt.source
    return lines[0], lines[1:201] + extra


def write_fuzz_folder(landing: Path, demo: Path, fmt: Format, count: int | None = None) -> list[str]:
    """Write the format's generated files (``fmt.files`` unless ``count``); returns their landing-relative names."""
    rng = random.Random(f"{SEED}:{fmt.source}")
    header, rows = seed_rows(demo, fmt)
    folder = landing / fmt.folder
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for number in range(fmt.files if count is None else count):
        path = folder / fmt.file_name.format(number)
        path.write_bytes(generate(rng, fmt, header, rows))
        names.append(path.relative_to(landing).as_posix())
    return names


# --------------------------------------------------------------------------------------------- loading once
@dataclass
class Outcome:
    landing: Path
    warehouse: Path
    files: list[str]
    error: str | None
    seconds: float


def load_once(root: Path, demo: Path, source: str) -> Outcome:
    """Generate one source's files into one landing folder and load them once, on a locked-down connection."""
    fmt = BY_SOURCE[source]
    landing = root / fmt.source / "landing"
    files = write_fuzz_folder(landing, demo, fmt)
    warehouse = root / fmt.source / "warehouse.duckdb"
    started = time.perf_counter()
    con = connect(warehouse, readable_dir=landing)
    error = None
    try:
        load_named(con, landing, fmt.source, load_contract())
    except Exception:  # the finding itself: no load may raise
        error = traceback.format_exc()
    finally:
        con.close()
    return Outcome(landing, warehouse, files, error, time.perf_counter() - started)


@pytest.fixture(scope="module")
def demo_landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_demo_landing(tmp_path_factory.mktemp("fuzz_seed") / "landing")


def _selected_formats(items: list[pytest.Item]) -> list[Format]:
    """The formats the selected tests that read ``outcomes`` are about (``-k storage`` loads one source)."""
    wanted: set[str] = set()
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "outcomes" in getattr(item, "fixturenames", ()):
            wanted |= {
                f.source for f in FORMATS if params.get("source") == f.source or params.get("format_name") == f.format
            }
    return [f for f in FORMATS if f.source in wanted]


@pytest.fixture(scope="module")
def outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, demo_landing: Path
) -> dict[str, Outcome]:
    """Every selected source loaded once, two sources at a time in fresh processes (pandera's per-file cost is
    CPU-bound)."""
    root = tmp_path_factory.mktemp("fuzz")
    heaviest_first = sorted(_selected_formats(request.session.items), key=lambda f: f.source != "scheduler_jobs")
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {f.source: pool.submit(load_once, root, demo_landing, f.source) for f in heaviest_first}
        done = {source: future.result() for source, future in futures.items()}
    print("load seconds:", {source: round(outcome.seconds, 1) for source, outcome in done.items()})
    return done


def _loaded(outcomes: dict[str, Outcome], source: str) -> Outcome:
    outcome = outcomes[source]
    assert outcome.error is None, "the load raised; see test_fuzzed_files_load_without_an_uncaught_exception"
    return outcome


SOURCES = [f.source for f in FORMATS]


def test_the_generator_is_deterministic(tmp_path, demo_landing):
    for fmt in FORMATS:
        first, second = tmp_path / fmt.source / "a", tmp_path / fmt.source / "b"
        write_fuzz_folder(first, demo_landing, fmt, count=30)
        write_fuzz_folder(second, demo_landing, fmt, count=30)
        for path in sorted((first / fmt.folder).iterdir()):
            assert path.read_bytes() == (second / fmt.folder / path.name).read_bytes()


def test_the_generator_makes_files_malformed_in_many_ways(tmp_path, demo_landing):
    """A fuzzer that only writes good files proves nothing: most files break a rule, some whole files go."""
    for fmt in FORMATS:
        write_fuzz_folder(tmp_path, demo_landing, fmt, count=60)
    contents = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    assert any(c == b"" for c in contents)
    assert any(c.startswith(codecs.BOM_UTF8) for c in contents)
    assert any(b"\r\n" in c for c in contents)
    assert any(b"\x00" in c for c in contents)
    assert sum(_not_utf8(c) for c in contents) >= 10
    assert any(len(c) > 131_072 for c in contents)


def _not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


@pytest.mark.parametrize("source", SOURCES)
def test_fuzzed_files_load_without_an_uncaught_exception(outcomes, source):
    outcome = outcomes[source]
    assert outcome.error is None, outcome.error


@pytest.mark.parametrize("source", SOURCES)
def test_every_fuzzed_file_is_conserved(outcomes, source):
    outcome = _loaded(outcomes, source)
    ledger = query(
        outcome.warehouse,
        "select source_file, rows_in, rows_staged, rows_quarantined, duplicate_of, "
        "refused_whole from raw.ingested_files where source = ? order by source_file",
        [source],
    )
    staged = dict(query(outcome.warehouse, f'select source_file, count(*) from raw."{source}" group by source_file'))
    quarantined = dict(
        query(
            outcome.warehouse,
            "select source_file, count(*) from raw.quarantine where source = ? group by source_file",
            [source],
        )
    )
    assert sorted(f for f, *_ in ledger) == sorted(outcome.files), "every file has exactly one ledger row"
    violations = [
        f"{row[0]}: {'; '.join(problems)}" for row in ledger if (problems := _ledger_problems(row, staged, quarantined))
    ]
    assert not violations, "\n".join(violations[:20])
    assert len(ledger) == BY_SOURCE[source].files
    # The whole run's figures, as the rows_conserved asset check reads them, agree too.
    totals = query(
        outcome.warehouse,
        "select sum(rows_in), sum(rows_staged), sum(rows_quarantined) from raw.ingested_files where source = ?",
        [source],
    )[0]
    refused = sum(row[3] - quarantined.get(row[0], 0) for row in ledger if row[5])  # records beyond the one row
    assert totals[0] == totals[1] + totals[2] == sum(staged.values()) + sum(quarantined.values()) + refused


def _ledger_problems(row: tuple, staged: dict[str, int], quarantined: dict[str, int]) -> list[str]:
    source_file, rows_in, rows_staged, rows_quarantined, duplicate_of, refused_whole = row
    problems = []
    if rows_in != rows_staged + rows_quarantined:
        problems.append(f"rows in {rows_in} != staged {rows_staged} + quarantined {rows_quarantined}")
    if staged.get(source_file, 0) != rows_staged:
        problems.append(f"raw table holds {staged.get(source_file, 0)} rows, ledger says {rows_staged}")
    if refused_whole and (quarantined.get(source_file, 0) != 1 or rows_staged != 0 or rows_quarantined < 1):
        problems.append(
            f"refused whole, yet quarantine holds {quarantined.get(source_file, 0)} lines, "
            f"{rows_staged} staged, {rows_quarantined} quarantined"
        )
    if not refused_whole and quarantined.get(source_file, 0) != rows_quarantined:
        problems.append(f"quarantine holds {quarantined.get(source_file, 0)} lines, ledger says {rows_quarantined}")
    if duplicate_of is not None and (rows_in, rows_staged, rows_quarantined) != (0, 0, 0):
        problems.append(f"duplicate of {duplicate_of} has rows")
    return problems


@pytest.mark.parametrize("format_name", sorted({f.format for f in FORMATS}))
def test_500_of_500_files_per_format_are_conserved(outcomes, format_name):
    conserved = 0
    for fmt in (f for f in FORMATS if f.format == format_name):
        outcome = _loaded(outcomes, fmt.source)
        conserved += query(
            outcome.warehouse,
            "select count(*) from raw.ingested_files where source = ? and rows_in = rows_staged + rows_quarantined",
            [fmt.source],
        )[0][0]
    assert conserved == FILES_PER_FORMAT


@pytest.mark.parametrize("source", SOURCES)
def test_no_line_is_counted_twice(outcomes, source):
    """Within a file, staged and quarantined line numbers are distinct and exist in the file, and a whole-file
    rejection (line 0) is the file's only record."""
    outcome = _loaded(outcomes, source)
    lines = query(
        outcome.warehouse,
        f"""
        select source_file, source_line from raw."{source}"
        union all
        select source_file, line from raw.quarantine where source = ?
        """,
        [source],
    )
    seen: set[tuple[str, int]] = set()
    repeated, outside = [], []
    for source_file, line in lines:
        if (source_file, line) in seen:
            repeated.append((source_file, line))
        seen.add((source_file, line))
        if not 0 <= line <= len(_physical_lines((outcome.landing / source_file).read_bytes())):
            outside.append((source_file, line))
    assert not repeated, repeated[:20]
    assert not outside, outside[:20]
    whole_file = query(
        outcome.warehouse,
        """
        select source_file from raw.quarantine where source = ? and line = 0
        intersect
        select source_file from raw.ingested_files where source = ?
            and (rows_in < 1 or rows_staged <> 0 or rows_quarantined <> rows_in or not refused_whole)
        """,
        [source, source],
    )
    assert not whole_file, whole_file[:20]


def _physical_lines(data: bytes) -> list[bytes]:
    lines = re.split(rb"\r\n|\r|\n", data)
    return lines[:-1] if lines and lines[-1] == b"" else lines


@pytest.mark.parametrize("source", SOURCES)
def test_a_staged_row_comes_from_the_line_it_names(outcomes, source):
    """Trace every staged row back to its file: the line ``source_line`` names holds the row's key.

    Checked where a line is unambiguous: UTF-8 files without a quote character (a quoted value may span lines)
    and without a lone carriage return.
    """
    fmt = BY_SOURCE[source]
    outcome = _loaded(outcomes, source)
    staged = query(outcome.warehouse, f'select source_file, source_line, {STAGED_KEY[source]} from raw."{source}"')
    traced, wrong = 0, []
    texts: dict[str, list[str] | None] = {}
    for source_file, line, key in staged:
        if source_file not in texts:
            texts[source_file] = _traceable_lines(outcome.landing / source_file, fmt)
        lines = texts[source_file]
        if lines is None:
            continue
        found = _key_on_line(fmt, lines, line)
        if found is None:
            continue
        traced += 1
        if found != key:
            wrong.append((source_file, line, key, found[:40]))
    assert not wrong, wrong[:20]
    assert traced >= 100, f"only {traced} rows could be traced"


def _traceable_lines(path: Path, fmt: Format) -> list[str] | None:
    data = path.read_bytes()
    if (fmt.kind == "csv" and b'"' in data) or b"\r" in data.replace(b"\r\n", b""):
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    return [line.decode("utf-8") for line in _physical_lines(text.encode("utf-8"))]


def _key_on_line(fmt: Format, lines: list[str], line: int) -> str | None:
    """The key as written on ``line`` (1-based), or None where it cannot be read back unambiguously."""
    if not 1 <= line <= len(lines):
        return f"<line {line} is not in the file>"
    text = lines[line - 1]
    if fmt.kind == "jsonl":
        try:
            value = json.loads(text).get(fmt.key)
        except (ValueError, RecursionError, AttributeError):
            return "<not a JSON object>"
        if fmt.key == "step":  # staged as BIGINT, written as 5, 5.0 or "5"
            try:
                return str(int(float(value)))
            except (TypeError, ValueError, OverflowError):
                return None
        return None if value is None else str(value)
    header = lines[0].split(fmt.delimiter)
    fields = text.split(fmt.delimiter)
    if fmt.kind == "sacct":  # --parsable ends lines with the delimiter: that empty field is not a field
        header = header[:-1] if header[-1] == "" else header
        fields = fields[:-1] if len(fields) == len(header) + 1 and fields[-1] == "" else fields
    if header.count(fmt.key) != 1:
        return None
    if len(fields) != len(header):
        return f"<{len(fields)} fields>"
    value = fields[header.index(fmt.key)].strip()
    if fmt.format == "focus" and value.lower() == "null":
        return ""
    if fmt.source == "storage_inventory":  # staged decoded, as AWS encodes CSV keys
        return unquote_plus(value)
    if fmt.key == "timestamp":  # staged as a UTC TIMESTAMP: compare the instant, written any ISO way
        try:
            instant = datetime.fromisoformat(value)
        except ValueError:
            return None
        if instant.tzinfo is not None:  # an offset is honoured: staged in UTC
            try:
                instant = instant.astimezone(UTC).replace(tzinfo=None)
            except OverflowError:  # before year 1 in UTC: quarantined, never staged
                return None
        return instant.strftime("%Y-%m-%dT%H:%M:%S")
    return value


# ------------------------------------------------------------------------------------ what the fuzzer found
# Each of these broke a whole source's load (an uncaught exception rolls the source back) or misnumbered lines
# before the fix; they are kept as plain examples so a regression names its cause.
PURCHASES_HEADER = (
    "purchase_id,purchased_on,asset_class,description,quantity,unit_price,currency,gpus_per_unit,"
    "depreciation_years,salvage_value\n"
)
SAMPLE_COLUMNS = (
    "timestamp,hostname,gpu,job_id,DCGM_FI_PROF_GR_ENGINE_ACTIVE,DCGM_FI_PROF_SM_ACTIVE,"
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE,DCGM_FI_PROF_NVLINK_TX_BYTES,DCGM_FI_PROF_NVLINK_RX_BYTES,"
    "DCGM_FI_DEV_POWER_USAGE"
)


def _load(tmp_path: Path, relative: str, data: bytes, source: str) -> Path:
    landing = tmp_path / "landing"
    (landing / relative).parent.mkdir(parents=True, exist_ok=True)
    (landing / relative).write_bytes(data)
    warehouse = tmp_path / "w.duckdb"
    con = connect(warehouse, readable_dir=landing)
    try:
        load_named(con, landing, source, load_contract())
    finally:
        con.close()
    return warehouse


def _quarantined(warehouse: Path) -> list[tuple]:
    return query(warehouse, "select line, rule from raw.quarantine order by line")


def test_values_pandera_passes_but_the_warehouse_type_refuses_are_quarantined(tmp_path):
    good = "P-1,2026-01-01,gpu_server,s,2,100.00,USD,8,3,0.00\n"
    warehouse = _load(
        tmp_path,
        "ledger/purchases.csv",
        (
            PURCHASES_HEADER
            + good
            + "P-2,2026-01-01,gpu_server,s,2147483648,100.00,USD,8,3,0.00\n"  # INTEGER overflows
            + "P-3,2026-02-30,gpu_server,s,2,100.00,USD,8,3,0.00\n"  # matches \d{4}-\d{2}-\d{2}, no such day
            + "P-4,2026-01-01,gpu_server,s,2,١٢.00,USD,8,3,0.00\n"  # Arabic-Indic digits match \d
            + "P-2,2026-01-01,gpu_server,s,1,100.00,USD,8,3,0.00\n"  # the key's first valid row: not a repeat
        ).encode(),
        "ledger_purchases",
    )
    assert _quarantined(warehouse) == [
        (3, "quantity.too_large"),  # the contract's domain (at most 10^9) refuses it before the warehouse type
        (4, "purchased_on.warehouse_type"),
        (5, "unit_price.warehouse_type"),
    ]
    assert query(warehouse, "select purchase_id, source_line from raw.ledger_purchases order by 2") == [
        ("P-1", 2),
        ("P-2", 6),
    ]


def test_json_values_that_cannot_be_stored_are_quarantined_and_u2028_is_not_a_line_end(tmp_path):
    step = {
        "batch_id": "B-7",
        "job_id": "1",
        "step": 1,
        "started_at": "2026-11-01T00:00:00",
        "ended_at": "2026-11-01T00:10:00",
        "committed": True,
        "discarded_reason": None,
    }
    lines = [
        dict(step, config_version="cfg\u2028with a line separator\x85and a NEL"),  # one row, staged
        dict(step, config_version="\ud800"),  # unpaired surrogate
        dict(step, job_id=["a", "list"]),  # not one value
        dict(step, started_at="2026-11-01T00:00:00" + " " * 100_000),  # not a timestamp
    ]
    text = "\n".join(json.dumps(line, ensure_ascii=False if n == 0 else True) for n, line in enumerate(lines))
    text += '\n{"step": ' + "9" * 5000 + "}\n"  # past int's digit limit
    warehouse = _load(tmp_path, "steps/steps.jsonl", text.encode("utf-8", errors="surrogatepass"), "training_steps")
    assert _quarantined(warehouse) == [
        (2, "json_text"),
        (3, "job_id.scalar"),
        (4, "started_at.timestamp_length"),
        (5, "json_syntax"),
    ]
    assert query(warehouse, "select source_line, config_version from raw.training_steps") == [
        (1, "cfg\u2028with a line separator\x85and a NEL")
    ]


def test_sacct_fields_that_used_to_raise(tmp_path):
    header = "JobID|State|Start|End|Timelimit|ReqTRES|AllocTRES|Restarts|NNodes|Elapsed|Comment"
    row = "{job}|COMPLETED|{start}|2026-11-03T01:00:00|01:00:00|gres/gpu={gpus}|gres/gpu=2|{restarts}|1|{elapsed}|"

    def line(job, start="2026-11-03T00:00:00", gpus="2", restarts="0", elapsed="01:00:00"):
        return row.format(job=job, start=start, gpus=gpus, restarts=restarts, elapsed=elapsed)

    warehouse = _load(
        tmp_path,
        "scheduler/sacct.txt",
        "\n".join(
            [
                header,
                line("1", start="2026-11-03T05:30:00+05:30"),  # an offset: converted to UTC, compared with End
                line("2", restarts="²"),  # str.isdigit() but not int(): read as no count
                line("3", gpus="2147483648"),  # fits Python and pandas, not INTEGER
                line("4", gpus="9" * 5000),  # past int's digit limit
                line("5", elapsed="1" + "0" * 30 + ":00"),  # a duration nobody ran
                line("6", start="0001-01-01T00:00:00+05:00"),  # the offset moves it before year 1
            ]
        ).encode(),
        "scheduler_jobs",
    )
    assert _quarantined(warehouse) == [
        (4, "gpus_requested.too_large"),  # the contract's domain (at most 10^6 GPUs) refuses it first
        (5, "tres_gpus"),
        (6, "elapsed_duration"),
        (7, "start_timestamp"),
    ]
    assert query(warehouse, "select job_id, start_at, restarts from raw.scheduler_jobs order by 1") == [
        ("1", datetime(2026, 11, 3, 0, 0), 0),
        ("2", datetime(2026, 11, 3, 0, 0), 0),
    ]


def test_sacct_gpu_counts_that_are_not_digits_are_quarantined_with_file_line_and_rule(tmp_path):
    """A signed or garbage gres/gpu count was read as 0 GPUs: a job that ran on 8 GPUs cost nothing, no warning."""
    header = "JobID|State|Start|End|Timelimit|ReqTRES|AllocTRES|Elapsed|Comment"
    row = "{job}|COMPLETED|2026-11-03T00:00:00|2026-11-03T01:00:00|01:00:00|{req}|{alloc}|01:00:00|batch=B-1"
    lines = [
        row.format(job="1", req="gres/gpu=8", alloc="cpu=8,gres/gpu=-8,node=1"),
        row.format(job="2", req="gres/gpu=x8", alloc="gres/gpu=8"),
        row.format(job="3", req="gres/gpu=8", alloc="gres/gpu=8"),
    ]
    warehouse = _load(tmp_path, "scheduler/sacct.txt", "\n".join([header, *lines]).encode(), "scheduler_jobs")
    assert query(warehouse, "select source, source_file, line, rule from raw.quarantine order by line") == [
        ("scheduler_jobs", "scheduler/sacct.txt", 2, "tres_gpus"),
        ("scheduler_jobs", "scheduler/sacct.txt", 3, "tres_gpus"),
    ]
    assert query(warehouse, "select job_id, gpus_requested, gpus_allocated from raw.scheduler_jobs") == [("3", 8, 8)]


def _step(tokens: int, started_at: str = "2026-11-03T00:10:00") -> str:
    return json.dumps(
        {
            "batch_id": "B-7",
            "job_id": "1002",
            "step": 1,
            "started_at": started_at,
            "ended_at": "2026-11-03T00:20:00",
            "committed": True,
            "discarded_reason": None,
            "samples": 512,
            "tokens": tokens,
        }
    )


# A record named twice in one file, as the review appended it: the later line silently replaced the first (B-7's raw
# storage 90.06 -> 23.36, its round 1 compute 39.64 -> 465.77, its tokens 30,000,000 -> 1,028,999,999). Each source:
# its folder, a header (None: JSON lines), the record, the record saying something else, another record, the rule.
REPEATED_KEYS = {
    "storage_prefix_rules": (
        "storage/prefix_rules{}.csv",
        "bucket,prefix,purpose,owner,batch_id,retention_days",
        "ml-prod,raw/b7/,raw,data-team,B-7,",
        "ml-prod,raw/b7/,raw,data-team,B-8,",
        "ml-prod,raw/b8/,raw,data-team,B-8,",
        "bucket+prefix.unique",
        "bucket and prefix repeat an earlier row",
    ),
    "batch_rounds": (
        "registry/rounds{}.csv",
        "batch_id,round,started_at,ended_at,evidence",
        "B-7,1,2026-11-02T00:00:00,2026-11-03T00:00:00,found it",
        "b-7,1,2026-11-02T00:00:00,2026-11-09T00:00:00,dup",  # the batch in another case: the same round
        "B-7,2,2026-11-03T00:00:00,2026-11-05T00:00:00,",
        "batch_id+round.unique",
        "batch_id and round repeat an earlier row",
    ),
    "training_steps": (
        "steps/steps{}.jsonl",
        None,
        _step(1_000_000),
        _step(999_999_999, started_at="2026-11-03T00:10:00Z"),  # the same instant, written with its zone
        _step(1_000_000, started_at="2026-11-03T00:20:00"),  # step 1 again, from another start: another step
        "job_id+step+started_at.unique",
        "job_id, step and started_at repeat an earlier row",
    ),
}


@pytest.mark.parametrize("source", sorted(REPEATED_KEYS))
def test_a_record_named_twice_in_one_file_is_quarantined_and_another_file_restates_it(tmp_path, source):
    """Within one file the first line of a record is kept; a later one is quarantined, whether it says something else
    or the same bytes again (as ``batch_id.unique`` and ``vendor+invoice_id.unique`` do). Another file naming the record
    again is a delivery of its own: raw keeps it, and staging reads the newest file's (``newest_delivery``)."""
    name, header, record, conflicting, other, rule, message = REPEATED_KEYS[source]
    landing = tmp_path / "landing"
    first = landing / name.format("_1")
    first.parent.mkdir(parents=True)
    top = [] if header is None else [header]
    first.write_text("\n".join([*top, record, conflicting, record, other]) + "\n", encoding="utf-8")
    (landing / name.format("_2")).write_text("\n".join([*top, conflicting]) + "\n", encoding="utf-8")
    _, rejected = _load_folder(landing, tmp_path / "w.duckdb", source)
    line = 1 if header is None else 2  # the record's line in either file
    first_file, second_file = name.format("_1"), name.format("_2")
    assert [(r[1], r[3], r[4], r[5]) for r in rejected] == [  # source_file, line, rule, message
        (first_file, line + 1, rule, message),
        (first_file, line + 2, rule, message),
    ]
    kept = query(
        tmp_path / "w.duckdb",
        f'select source_file, source_line from raw."{source}" order by source_file, source_line',
    )
    assert kept == [(first_file, line), (first_file, line + 3), (second_file, line)]


def test_a_step_after_the_night_is_quarantined(tmp_path):
    """A step file records steps that ran: a step stamped 2090 (or ending an hour from now) would count its tokens
    into the batch's counted tokens before they exist. A few minutes of clock skew are allowed."""
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    soon, later = (f"{now + timedelta(minutes=m):%Y-%m-%dT%H:%M:%S}Z" for m in (5, 60))
    lines = [
        _step(1_000_000),
        json.loads(_step(2_000_000, started_at="2090-01-01T00:00:00")) | {"step": 2, "ended_at": "2090-01-01T00:10:00"},
        json.loads(_step(3_000_000, started_at=soon)) | {"step": 3, "ended_at": soon},  # within the skew
        json.loads(_step(4_000_000, started_at="2026-11-03T00:20:00")) | {"step": 4, "ended_at": later},
    ]
    landing = tmp_path / "landing"
    (landing / "steps").mkdir(parents=True)
    (landing / "steps" / "steps.jsonl").write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n", encoding="utf-8"
    )
    _, rejected = _load_folder(landing, tmp_path / "w.duckdb", "training_steps")
    assert [(r[1], r[3], r[4]) for r in rejected] == [
        ("steps/steps.jsonl", 2, "started_at.after_night"),  # a row is quarantined once, by its first rule broken
        ("steps/steps.jsonl", 4, "ended_at.after_night"),
    ]
    staged = query(tmp_path / "w.duckdb", 'select step, tokens from raw."training_steps" order by step')
    assert staged == [(1, 1_000_000), (3, 3_000_000)]


def test_overlapping_runs_of_one_replica_in_one_file_are_quarantined(tmp_path):
    """A replica cannot run twice at once: two runs of one replica_id in one file that overlap in time were both
    kept, and the model's GPU cost counted the overlap twice (a warning said so, the night exited 0). Each run that
    overlaps another of its replica in its file is quarantined (replica_runs.overlap); a run ending when the next
    starts, another replica at the same times, and a run in another file (staging's to supersede) are kept.

    replicas.csv (line: replica, GPUs x hours x price):
      2: R-A [00:00, 10:00) 2 x 10 x 3.00 = 60.00  overlaps line 3
      3: R-A [06:00, 12:00) 2 x 6 x 3.00 = 36.00   overlaps line 2
      4: R-A [12:00, 14:00) 2 x 2 x 3.00 = 12.00   starts as line 3 ends: kept
      5: R-B [00:00, 10:00) 1 x 10 x 3.00 = 30.00  another replica: kept
      6: R-C [00:00, 20:00) 1 x 20 x 2.00 = 40.00  holds line 7, overlaps line 8
      7: R-C [05:00, 06:00) 1 x 1 x 2.00 = 2.00    inside line 6
      8: R-C [19:00, 21:00) 1 x 2 x 2.00 = 4.00    overlaps line 6 only (not its neighbour line 7)
    replicas_2.csv line 2: R-A [07:00, 08:00) 2 x 1 x 3.00 = 6.00: overlaps line 2 and 3 of the other file, kept.
    assistant-small's GPU cost was 60 + 36 + 12 + 30 + 40 + 2 + 4 + 6 = 190.00; it is 12 + 30 + 6 = 48.00."""
    header = "replica_id,model,gpus,started_at,ended_at,gpu_hour_price"
    runs = [
        ("R-A", 2, "00:00", "10:00", "3.00"),
        ("R-A", 2, "06:00", "12:00", "3.00"),
        ("R-A", 2, "12:00", "14:00", "3.00"),
        ("R-B", 1, "00:00", "10:00", "3.00"),
        ("R-C", 1, "00:00", "20:00", "2.00"),
        ("R-C", 1, "05:00", "06:00", "2.00"),
        ("R-C", 1, "19:00", "21:00", "2.00"),
    ]

    def line(replica: str, gpus: int, start: str, end: str, price: str) -> str:
        return f"{replica},assistant-small,{gpus},2026-11-01T{start}:00,2026-11-01T{end}:00,{price}"

    landing = tmp_path / "landing"
    (landing / "serving").mkdir(parents=True)
    (landing / "serving" / "replicas.csv").write_text(
        "\n".join([header, *(line(*r) for r in runs)]) + "\n", encoding="utf-8"
    )
    second = f"{header}\n{line('R-A', 2, '07:00', '08:00', '3.00')}\n"
    (landing / "serving" / "replicas_2.csv").write_text(second, encoding="utf-8")
    warehouse = tmp_path / "w.duckdb"
    _, rejected = _load_folder(landing, warehouse, "serving_replicas")

    message = (
        "the row should have no overlap in time with another run of its replica_id in the file "
        "(each run that overlaps one is quarantined)"
    )
    assert [(r[1], r[3], r[4], r[5]) for r in rejected] == [
        ("serving/replicas.csv", n, "replica_runs.overlap", message) for n in (2, 3, 6, 7, 8)
    ]
    kept = query(
        warehouse,
        "select source_file, source_line, replica_id, gpus, started_at, ended_at, gpu_hour_price "
        "from raw.serving_replicas order by source_file, source_line",
    )
    assert [(k[0], k[1], k[2]) for k in kept] == [
        ("serving/replicas.csv", 4, "R-A"),
        ("serving/replicas.csv", 5, "R-B"),
        ("serving/replicas_2.csv", 2, "R-A"),
    ]
    gpu_cost = sum(gpus * Decimal((end - start).total_seconds()) / 3600 * price for *_, gpus, start, end, price in kept)
    assert gpu_cost == Decimal("48.00")  # 12.00 + 30.00 + 6.00; it was 190.00 with the five overlapping runs
    # rows in = staged + quarantined, file by file
    assert query(
        warehouse,
        "select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files "
        "where source = 'serving_replicas' order by source_file",
    ) == [("serving/replicas.csv", 7, 2, 5), ("serving/replicas_2.csv", 1, 1, 0)]


def _sample(minute: int, gpu: int = 0) -> str:
    return f"2026-11-01T00:{minute:02d}:00,gpu-a,{gpu},1,0.9,0.8,0.5,1e8,1e8,300"


def test_device_samples_without_the_optional_columns_load_them_as_null(tmp_path):
    header = ",".join(c for c in SAMPLE_COLUMNS.split(",") if c not in ("job_id", "DCGM_FI_DEV_POWER_USAGE"))
    rows = ["2026-11-01T00:00:00,gpu-a,0,0.9,0.8,0.5,1e8,1e8", "2026-11-01T00:01:00,gpu-a,0,0.9,0.8,0.5,1e8,1e8"]
    warehouse = _load(tmp_path, "telemetry/a.csv", ("\n".join([header, *rows]) + "\n").encode(), "device_samples")
    assert query(
        warehouse, "select source_line, job_id, DCGM_FI_DEV_POWER_USAGE from raw.device_samples order by 1"
    ) == [(2, None, None), (3, None, None)]


def test_device_sample_lines_are_numbered_across_empty_and_adjacent_broken_lines(tmp_path):
    lines = [
        SAMPLE_COLUMNS,
        _sample(0),
        "",
        _sample(2),
        "broken",
        "also,broken",
        _sample(5),
        "",
        "",
        _sample(8),
        " ",
        _sample(10),
    ]
    for name, data in (
        ("lf.csv", "\n".join(lines) + "\n"),
        ("crlf.csv", "\r\n".join(lines) + "\r\n"),
        ("bom.csv", "\ufeff" + "\n".join(lines) + "\n"),
    ):
        warehouse = _load(tmp_path / name, f"telemetry/{name}", data.encode(), "device_samples")
        staged = query(warehouse, 'select source_line, minute("timestamp") from raw.device_samples order by 1')
        assert staged == [(2, 0), (4, 2), (7, 5), (10, 8), (12, 10)], name
        assert [line for line, _ in _quarantined(warehouse)] == [5, 6, 11], name


def test_the_blank_line_scan_agrees_across_chunk_boundaries(tmp_path, monkeypatch):
    from cost_pipeline.ingest.lib import in_database

    rng = random.Random(SEED)
    for _ in range(200):
        data = bytes(rng.choice(b"\n\r\nab") for _ in range(rng.randint(0, 40)))
        path = tmp_path / "x.csv"
        path.write_bytes(data)
        lines = data.split(b"\n")[:-1]
        expected = [n for n, line in enumerate(lines, start=1) if n > 1 and line in (b"", b"\r")]
        whole = in_database.scan_csv(path)
        assert whole[1] == expected, data
        with monkeypatch.context() as patch:
            patch.setattr(in_database, "_SCAN_CHUNK", rng.randint(1, 4))
            assert in_database.scan_csv(path) == whole, data


def test_a_replica_id_in_another_case_is_the_same_replica_within_a_file(tmp_path):
    """A replica id is compared case-folded (Col.folded): R-A and r-a in one file are one replica. Their runs that
    overlap were both kept (two replicas to the contract) and counted the model's GPU cost twice for the overlap;
    each is quarantined (replica_runs.overlap), and a run of r-b starting when R-B's does repeats its key."""
    landing = tmp_path / "landing"
    (landing / "serving").mkdir(parents=True)
    (landing / "serving" / "replicas.csv").write_text(
        "replica_id,model,gpus,started_at,ended_at,gpu_hour_price\n"
        "R-A,assistant-small,2,2026-11-01T00:00:00,2026-11-01T10:00:00,3.00\n"
        "r-a,assistant-small,2,2026-11-01T06:00:00,2026-11-01T12:00:00,3.00\n"
        "R-B,assistant-small,1,2026-11-01T00:00:00,2026-11-01T10:00:00,3.00\n"
        "r-b,assistant-small,1,2026-11-01T00:00:00,2026-11-01T10:00:00,3.00\n",
        encoding="utf-8",
    )
    rows, rejected = _load_folder(landing, tmp_path / "w.duckdb", "serving_replicas")
    assert [(r[3], r[4]) for r in rejected] == [
        (2, "replica_runs.overlap"),
        (3, "replica_runs.overlap"),
        (5, "replica_id+started_at.unique"),
    ]
    assert len(rows) == 1


def test_two_registry_batches_differing_only_in_case_are_refused(tmp_path):
    """A batch id is compared case-folded (Col.folded), as jobs are matched to it (resolve_batch): a registry file
    naming B-1 and b-1 names one batch twice, and the second is quarantined (batch_id.unique)."""
    landing = tmp_path / "landing"
    (landing / "registry").mkdir(parents=True)
    row = "assistant-rl,goal,team,d,m,c,cfg,v1,,,,,"
    (landing / "registry" / "batches.csv").write_text(
        f"{REGISTRY_HEADER}B-1,{row}\nb-1,{row}\nB-2,{row}\n", encoding="utf-8"
    )
    rows, rejected = _load_folder(landing, tmp_path / "w.duckdb", "batch_registry")
    assert [(r[3], r[4]) for r in rejected] == [(3, "batch_id.unique")]
    assert len(rows) == 2


def _load_folder(landing: Path, warehouse: Path, source: str) -> tuple[list[tuple], list[tuple]]:
    """Load ``landing`` (one source) into a new ``warehouse``: its raw rows and quarantine rows, ordered."""
    con = connect(warehouse, readable_dir=landing)
    try:
        load_named(con, landing, source, load_contract())
    finally:
        con.close()
    rows = query(warehouse, f'select * from raw."{source}" order by source_file, source_line')
    rejected = query(warehouse, "select * from raw.quarantine order by source_file, line, rule")
    return rows, rejected


def _litellm_seeds() -> list[str]:
    """LiteLLM spend-log lines whose metadata takes every shape a JSON value can: the rows of
    tests/test_litellm_requests.py, then an object, a JSON string (once and twice encoded), null, a number, an
    array, a boolean and none at all."""
    from tests.test_litellm_requests import LITELLM_ROWS

    shapes = [
        {"task_id": "t-9", "attempt": 2, "business_line": "support", "status": "failure"},
        json.dumps({"task_id": "t-9", "human_handoff": "True"}),
        json.dumps(json.dumps({"task_id": "t-9"})),
        None,
        3,
        [1, {"task_id": "t-9"}],
        True,
    ]
    rows = [*LITELLM_ROWS, *({**LITELLM_ROWS[0], "metadata": shape} for shape in shapes)]
    rows.append({key: value for key, value in LITELLM_ROWS[0].items() if key != "metadata"})
    return [json.dumps(dict(row, request_id=f"ll-{number}")) for number, row in enumerate(rows)]


def test_the_requests_sql_vouches_for_stages_as_the_pandas_path_would(tmp_path, demo_landing, monkeypatch):
    """The request lines SQL maps itself (``request_lines._mapped_sql``, ``sure``) stage the raw rows and quarantine
    rows that reading every line in Python (the contract schema through pandera) stages: on 150 fuzzed files of the
    demo's native lines and 100 of LiteLLM lines (every shape of metadata), plus both unmutated, loaded with the
    SQL's vouching and with none of it. SQL vouches for every unmutated line, and for most lines overall."""
    from cost_pipeline.ingest import request_lines

    fmt = BY_SOURCE["serving_requests"]
    landing = tmp_path / "landing"
    write_fuzz_folder(landing, demo_landing, fmt, count=150)
    folder, litellm = landing / fmt.folder, _litellm_seeds()
    rng = random.Random(f"{SEED}:litellm")
    for number in range(100):
        (folder / f"litellm_{number:03d}.jsonl").write_bytes(generate(rng, fmt, None, litellm))
    clean = {"demo.jsonl": (demo_landing / fmt.seed_file).read_text(), "litellm.jsonl": "\n".join(litellm) + "\n"}
    for name, text in clean.items():
        (folder / name).write_text(text, encoding="utf-8")

    doubtful: dict[str, int] = {}
    stage, in_python = request_lines._stage_jsonl, request_lines._in_python

    def staged(con, path, schema):
        doubtful[path.name] = 0
        return stage(con, path, schema)

    def counted(con, schema, lines, read):
        doubtful[next(reversed(doubtful))] = len(lines)
        return in_python(con, schema, lines, read)

    with monkeypatch.context() as patch:
        patch.setattr(request_lines, "_stage_jsonl", staged)
        patch.setattr(request_lines, "_in_python", counted)
        vouched = _load_folder(landing, tmp_path / "sql.duckdb", fmt.source)
    mapped = request_lines._mapped_sql
    monkeypatch.setattr(
        request_lines, "_mapped_sql", lambda schema: f"select * replace (false as sure) from ({mapped(schema)})"
    )
    in_python_only = _load_folder(landing, tmp_path / "python.duckdb", fmt.source)

    assert vouched == in_python_only
    assert doubtful["demo.jsonl"] == doubtful["litellm.jsonl"] == 0
    (lines,) = query(tmp_path / "sql.duckdb", "select sum(rows_in) from raw.ingested_files")[0]
    assert sum(doubtful.values()) < lines / 2, (sum(doubtful.values()), lines)
    shapes = query(tmp_path / "sql.duckdb", "select request_shape, count(*) from raw.serving_requests group by 1")
    assert dict(shapes).keys() == {"native", "litellm"}


def test_the_doubtful_json_patterns_find_what_one_alternation_finds():
    """``request_lines._doubtful`` searches a pattern per leading character (a trailing comma; NaN or an infinity
    after ``:``, ``,`` or ``[``; an escaped surrogate or NUL): it finds something exactly where the one alternation
    they were cut from does, on every piece of text that makes a line doubtful and its near misses, alone and
    inside a sound line."""
    from cost_pipeline.ingest import request_lines

    alternation = r",\s*[\]}]|[:,\[]\s*[-+]?(?i:nan|inf)|\\u[dD][89a-fA-F]|\\u0000"
    leads, spaces, signs = ":,[", ("", " ", "\t "), ("", "-", "+")
    words = ("NaN", "nan", "Infinity", "inf", "INF", "nul", "in")
    pieces = [f"{lead}{space}{sign}{word}" for lead in leads for space in spaces for sign in signs for word in words]
    pieces += [f",{space}{end}" for space in ("", " ", "\n\t") for end in "]}"]
    pieces += [f"\\u{code}" for code in ("d800", "DBFF", "dc00", "D7FF", "0000", "0001", "e000")]
    pieces += ['"tenant"', '"info, nan"', "[1, 2]", "{}", "[]", ": 1", ", 2"]
    sound = '{"request_id": "r-1", "model": "m", "input_tokens": 3, "tags": ["a", "b"]}'
    texts = [sound, *pieces, *(sound[:at] + piece + sound[at:] for piece in pieces for at in (0, 1, 20, len(sound)))]
    con = duckdb.connect()
    con.execute("create table texts as select unnest(?::varchar[]) as text", [texts])
    rows = con.execute(
        f"select text, regexp_matches(text, ?), {request_lines._doubtful('text')} from texts", [alternation]
    ).fetchall()
    assert 0 < sum(found for _, found, _ in rows) < len(rows)  # doubtful texts and sound ones
    assert [text for text, found, split in rows if found != split] == []
