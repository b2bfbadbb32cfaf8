"""A night reads only new files (issues 10 and 15): a file whose bytes the same loader loaded before keeps its raw
rows, quarantined lines and ledger row without being read again, and the warehouse ends exactly as a full reload of
the same landing folder leaves it. A changed loader (code, contract, raw columns, options) reads everything again.
The large sources load in DuckDB (device samples here); the small ones are read in Python (each, on the demo's files).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from cost_pipeline.contract import load_contract
from cost_pipeline.contract.schemas import DEVICE_SAMPLE_BASE_COLUMNS
from cost_pipeline.demo import write_demo_landing
from cost_pipeline.ingest.lib import source as source_module
from cost_pipeline.ingest.lib import warehouse as wh
from cost_pipeline.ingest.lib.in_database import load_in_database
from cost_pipeline.ingest.lib.source import RowLoader, Source
from cost_pipeline.ingest.registry import SOURCES
from cost_pipeline.ingest.telemetry import DEVICE_SAMPLES
from tests.helpers import source_state

# Its module-scoped fixture runs once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("incremental_load")

HEADER = ",".join(name for name, _ in DEVICE_SAMPLE_BASE_COLUMNS) + "\n"


def _samples(host: str, day: int, bad_line: bool = False) -> str:
    rows = [f"2026-11-{day:02d}T00:0{m}:00,{host},0,1,0.9,0.8,0.5,1e8,1e8,300\n" for m in range(3)]
    if bad_line:
        rows.insert(1, f"2026-11-{day:02d}T00:05:00,{host},0,1,NaN,0.8,0.5,1e8,1e8,300\n")
    return HEADER + "".join(rows)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


class _Night:
    """Loads device samples into one warehouse and records which files were read."""

    def __init__(self, landing: Path, warehouse: Path) -> None:
        self.landing, self.warehouse, self.read = landing, warehouse, []

    def load(self) -> wh.IngestReport:
        # As a night loads it: bound to the contract (its power bound), which keeps reading only new files.
        loader = DEVICE_SAMPLES.loader.bound(DEVICE_SAMPLES.loader, load_contract(), self.landing)

        def counted(con, path, blank_lines):
            self.read.append(path.relative_to(self.landing).as_posix())
            return loader.stage(con, path, blank_lines)

        def counted_together(con, files):  # small files read together (a group's read is counted once it is read)
            broken = loader.stage_group(con, files)
            self.read.extend(path.relative_to(self.landing).as_posix() for path, _ in files)
            return broken

        con = wh.connect(self.warehouse, self.landing)
        try:
            self.read = []
            files = DEVICE_SAMPLES.files(self.landing)
            return load_in_database(
                con,
                self.landing,
                files,
                DEVICE_SAMPLES.name,
                dataclasses.replace(loader, stage=counted, stage_group=counted_together),
            )
        finally:
            con.close()

    def state(self) -> dict[str, list[tuple]]:
        return source_state(self.warehouse, "device_samples")


def _full_reload(landing: Path, tmp_path: Path) -> tuple[wh.IngestReport, dict]:
    fresh = _Night(landing, tmp_path / "fresh.duckdb")
    return fresh.load(), fresh.state()


def _counts(report: wh.IngestReport) -> tuple:
    return report.files, report.rows_in, report.rows_staged, report.rows_quarantined, dict(report.by_rule)


def test_the_second_night_reads_only_the_new_file_and_ends_as_a_full_reload(tmp_path):
    landing = tmp_path / "landing"
    _write(landing / "telemetry" / "node1_2026-11-01.csv", _samples("gpu-a", 1, bad_line=True))
    _write(landing / "telemetry" / "node2_2026-11-01.csv", _samples("gpu-b", 1))
    night = _Night(landing, tmp_path / "w.duckdb")
    night.load()
    assert night.read == ["telemetry/node1_2026-11-01.csv", "telemetry/node2_2026-11-01.csv"]

    _write(landing / "telemetry" / "node1_2026-11-02.csv", _samples("gpu-a", 2))
    report = night.load()
    assert night.read == ["telemetry/node1_2026-11-02.csv"]
    full_report, full_state = _full_reload(landing, tmp_path)
    assert night.state() == full_state
    assert _counts(report) == _counts(full_report) == (3, 10, 9, 1, {"DCGM_FI_PROF_GR_ENGINE_ACTIVE.not_finite": 1})
    assert report.conserved


def test_a_redelivered_file_is_read_again_and_a_deleted_one_is_kept_unread(tmp_path):
    landing = tmp_path / "landing"
    first = _write(landing / "telemetry" / "node1.csv", _samples("gpu-a", 1))
    gone = _write(landing / "telemetry" / "node2.csv", _samples("gpu-b", 1))
    _write(landing / "telemetry" / "node3.csv", _samples("gpu-c", 1))
    night = _Night(landing, tmp_path / "w.duckdb")
    night.load()

    _write(first, _samples("gpu-a", 3))  # the same name, other bytes: a redelivery
    gone.unlink()
    report = night.load()
    assert night.read == ["telemetry/node1.csv"]
    assert report.missing and report.missing[0][0] == "telemetry/node2.csv"
    state = night.state()
    assert {row[-3] for row in state["raw"]} == {"telemetry/node1.csv", "telemetry/node2.csv", "telemetry/node3.csv"}
    assert sum(1 for row in state["raw"] if row[-3] == "telemetry/node1.csv" and row[0].day == 3) == 3


def test_a_changed_loader_reads_every_file_again(tmp_path):
    landing = tmp_path / "landing"
    _write(landing / "telemetry" / "node1.csv", _samples("gpu-a", 1))
    night = _Night(landing, tmp_path / "w.duckdb")
    night.load()
    night.load()
    assert night.read == []

    con = wh.connect(night.warehouse)
    con.execute("update ops.loaded_files set loader_sha256 = 'an older release'")
    con.close()
    night.load()
    assert night.read == ["telemetry/node1.csv"]
    night.load()
    assert night.read == []


def test_a_copy_of_a_loaded_file_is_still_a_duplicate_of_the_reused_original(tmp_path):
    landing = tmp_path / "landing"
    _write(landing / "telemetry" / "b_node.csv", _samples("gpu-a", 1))
    night = _Night(landing, tmp_path / "w.duckdb")
    night.load()
    _write(landing / "telemetry" / "c_copy.csv", _samples("gpu-a", 1))  # later in sorted order: a duplicate
    report = night.load()
    assert night.read == [] and report.duplicates == [("telemetry/c_copy.csv", "telemetry/b_node.csv")]
    _write(landing / "telemetry" / "a_first.csv", _samples("gpu-a", 1))  # earlier in sorted order: now the original
    night.load()
    assert night.read == ["telemetry/a_first.csv"]
    assert night.state() == _full_reload(landing, tmp_path)[1]


@pytest.mark.parametrize("columns_changed", [False, True])
def test_raw_keeps_its_table_when_its_columns_are_the_contracts(tmp_path, columns_changed):
    landing = tmp_path / "landing"
    _write(landing / "telemetry" / "node1.csv", _samples("gpu-a", 1))
    night = _Night(landing, tmp_path / "w.duckdb")
    night.load()
    if columns_changed:  # a raw table from an older contract: one column fewer
        con = wh.connect(night.warehouse)
        con.execute("alter table raw.device_samples drop column DCGM_FI_DEV_POWER_USAGE")
        con.close()
    _write(landing / "telemetry" / "node2.csv", _samples("gpu-b", 1))
    night.load()
    assert night.read == (
        ["telemetry/node1.csv", "telemetry/node2.csv"] if columns_changed else ["telemetry/node2.csv"]
    )
    assert night.state() == _full_reload(landing, tmp_path)[1]


def _hash_counter(monkeypatch) -> list[str]:
    from cost_pipeline.ingest.lib import in_database

    hashed: list[str] = []
    real_sha256 = in_database.file_sha256
    monkeypatch.setattr(in_database, "file_sha256", lambda p: hashed.append(p.name) or real_sha256(p))
    return hashed


def test_a_file_is_hashed_again_when_its_stat_changed_and_read_when_its_bytes_did(tmp_path, monkeypatch):
    from cost_pipeline.ingest.lib import reuse

    monkeypatch.setattr(reuse, "RACY_NS", 0)  # every stat trusted: the files here were all written just now
    landing = tmp_path / "landing"
    path = _write(landing / "telemetry" / "node1.csv", _samples("gpu-a", 1))
    night = _Night(landing, tmp_path / "w.duckdb")
    night.load()
    hashed = _hash_counter(monkeypatch)

    night.load()  # the same stat: neither hashed nor read
    assert (hashed, night.read) == ([], [])
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))  # touched: hashed, not read
    night.load()
    assert (hashed, night.read) == (["node1.csv"], [])
    hashed.clear()
    # Other bytes of the same size, its modification time set back: the change time still tells.
    before = path.stat()
    path.write_text(_samples("gpu-a", 2), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    night.load()
    assert (hashed, night.read) == (["node1.csv"], ["telemetry/node1.csv"])
    assert night.state() == _full_reload(landing, tmp_path)[1]


def test_a_stat_taken_right_after_the_file_changed_is_not_trusted(tmp_path, monkeypatch):
    landing = tmp_path / "landing"
    _write(landing / "telemetry" / "node1.csv", _samples("gpu-a", 1))
    night = _Night(landing, tmp_path / "w.duckdb")
    night.load()  # within two seconds of the write: the next night hashes it
    hashed = _hash_counter(monkeypatch)
    night.load()
    assert (hashed, night.read) == (["node1.csv"], [])


def test_a_file_refused_whole_is_read_again_the_next_night(tmp_path):
    """A refusal may have been the machine's (out of memory, say), not the file's: it is never reused."""
    landing = tmp_path / "landing"
    _write(landing / "telemetry" / "node1.csv", _samples("gpu-a", 1))
    _write(landing / "telemetry" / "node2.csv", "a,b\n1,2\n")  # refused whole: no sample columns
    night = _Night(landing, tmp_path / "w.duckdb")
    first = night.load()
    assert first.by_rule == {"file_format": 1}
    second = night.load()
    assert night.read == ["telemetry/node2.csv"]
    assert _counts(second) == _counts(first)


# The sources read in Python (pandas + pandera) reuse files the same way: each one, on the demo's files.
ROW_SOURCES = [source for source in SOURCES.values() if isinstance(source.loader, RowLoader)]


@pytest.fixture(scope="module")
def demo_landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_demo_landing(tmp_path_factory.mktemp("demo") / "landing")


class _RowNight:
    """Loads one Python-read source into one warehouse and records which files were parsed."""

    def __init__(self, source: Source, landing: Path, warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.source, self.landing, self.warehouse, self.read = source, landing, warehouse, []
        for name in ("parse_file", "parse_parquet"):
            parse = getattr(source_module, name)

            def counted(path, *args, _parse=parse):
                self.read.append(path.relative_to(self.landing).as_posix())
                return _parse(path, *args)

            monkeypatch.setattr(source_module, name, counted)

    def load(self) -> wh.IngestReport:
        con = wh.connect(self.warehouse, self.landing)
        try:
            self.read = []
            return self.source.load(con, self.landing, load_contract())
        finally:
            con.close()

    def state(self) -> dict[str, list[tuple]]:
        return source_state(self.warehouse, self.source.name)


@pytest.mark.parametrize("source", ROW_SOURCES, ids=lambda source: source.name)
def test_a_source_read_in_python_reads_only_new_bytes_and_ends_as_a_full_reload(
    source, demo_landing, tmp_path, monkeypatch
):
    landing = tmp_path / "landing"
    files = [path.relative_to(demo_landing) for path in source.files(demo_landing)]
    assert files, f"the demo has no {source.name} file"
    for name in files:
        (landing / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(demo_landing / name, landing / name)
    night = _RowNight(source, landing, tmp_path / "w.duckdb", monkeypatch)
    first = night.load()
    assert night.read == [name.as_posix() for name in files]

    again = night.load()  # nothing new: no file parsed, the same counts
    assert night.read == [] and _counts(again) == _counts(first)

    # A copy of the last file under a name after it is its duplicate; the original stays unread.
    last = files[-1]
    stem, extension = last.name.split(".", 1)
    copy = last.with_name(f"{stem}_zz.{extension}")
    shutil.copyfile(landing / last, landing / copy)
    assert landing / copy in source.files(landing)
    report = night.load()
    assert night.read == [copy.as_posix()]
    assert report.duplicates == [(copy.as_posix(), last.as_posix())]
    fresh = _RowNight(source, landing, tmp_path / "fresh.duckdb", monkeypatch)
    full = fresh.load()
    assert night.state() == fresh.state() and _counts(report) == _counts(full)


def test_a_source_read_in_python_reads_every_file_again_when_its_options_change(demo_landing, tmp_path, monkeypatch):
    """Launch options change how a file is read (a delimiter, a time zone): files read under others are read again."""
    source = SOURCES["timesheets"]
    landing = tmp_path / "landing"
    shutil.copytree(demo_landing / source.folder, landing / source.folder)
    night = _RowNight(source, landing, tmp_path / "w.duckdb", monkeypatch)
    night.load()
    night.load()
    assert night.read == []
    changed = dataclasses.replace(source, options=_changed_options(source))
    night.source = changed
    night.load()
    assert night.read == [p.relative_to(landing).as_posix() for p in source.files(landing)]


def _changed_options(source: Source) -> type:
    """The source's options class with its first option's default changed."""
    fields = dataclasses.fields(source.options)
    first = fields[0]
    default = source.options()
    value = getattr(default, first.name)
    other = (not value) if isinstance(value, bool) else f"{value}-other" if isinstance(value, str) else value + 1
    return dataclasses.make_dataclass(
        source.options.__name__,
        [(f.name, f.type, dataclasses.field(default=other if f is first else f.default)) for f in fields],
        frozen=True,
    )


def test_a_file_with_a_row_after_the_night_is_read_again_the_next_night(tmp_path, monkeypatch):
    """A row quarantined for a time after the night (``night_clock``) is judged by each night's clock: its file is
    never reused, so a later night reads it as a fresh warehouse would."""
    source = SOURCES["service_invoices"]
    landing = tmp_path / "landing"
    header = "invoice_id,vendor,batch_id,stage,amount,currency,invoiced_on,service_month\n"
    _write(landing / "services" / "a.csv", header + "I-1,V,B-7,initial_delivery,2400.00,USD,2026-11-10,\n")
    _write(landing / "services" / "b.csv", header + "LC-FUT,Labelcraft,B-7,ongoing_support,700.00,USD,,2099-01\n")
    night = _RowNight(source, landing, tmp_path / "w.duckdb", monkeypatch)
    first = night.load()
    assert night.read == ["services/a.csv", "services/b.csv"]
    assert _counts(first) == (2, 2, 1, 1, {"service_month.after_night": 1})
    again = night.load()
    assert night.read == ["services/b.csv"]
    assert _counts(again) == _counts(first)
    fresh = _RowNight(source, landing, tmp_path / "fresh.duckdb", monkeypatch)
    fresh.load()
    assert night.state() == fresh.state()
