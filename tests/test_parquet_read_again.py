"""A Parquet landing file is checked without its rows being kept, and its good rows are read from it again inside
the load's transaction (cost_pipeline/ingest/lib/in_database.py; issue 15: holding every checked row of a
cluster-day spilled more than the disk had). What it loads, quarantines and counts is what the same rows as CSV give;
a retracted file's copy still counts every record; a file that changes between its check and its second read fails
the load, naming the file, and raw keeps what it had."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from cost_pipeline.contract import load_contract
from cost_pipeline.contract.schemas import DEVICE_SAMPLE_BASE_COLUMNS
from cost_pipeline.ingest.lib import in_database
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_named
from cost_pipeline.retract import retract
from tests.helpers import query

HEADER = ",".join(name for name, _ in DEVICE_SAMPLE_BASE_COLUMNS)
GOOD = "2026-11-01T00:0{m}:00,gpu-a,0,1,0.9,0.8,0.5,1e8,1e8,300\n"
BAD = "2026-11-01T00:09:00,gpu-a,0,1,1.7,0.8,0.5,1e8,1e8,300\n"  # an activity above 1
LEDGER = "select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files order by 1"
SAMPLE_COLUMNS = ", ".join(f'"{name}"' for name, _ in DEVICE_SAMPLE_BASE_COLUMNS)


def _samples(folder: Path, name: str, minutes: range, bad: bool = True) -> Path:
    """Samples at ``minutes`` (and one bad one) as ``name``: CSV, or Parquet written by DuckDB from that CSV."""
    folder.mkdir(parents=True, exist_ok=True)
    text = HEADER + "\n" + "".join(GOOD.format(m=m) for m in minutes) + (BAD if bad else "")
    csv = folder / (name if name.endswith(".csv") else f"{name}.csv.tmp")
    csv.write_text(text, encoding="utf-8")
    if name.endswith(".csv"):
        return csv
    con = duckdb.connect()
    con.execute(f"copy (select * from read_csv('{csv}', all_varchar = true)) to '{folder / name}' (format parquet)")
    con.close()
    csv.unlink()
    return folder / name


def _load(landing: Path, warehouse: Path):
    con = connect(warehouse, readable_dir=landing)
    try:
        report = load_named(con, landing, "device_samples", load_contract())
    finally:
        con.close()
    assert report.conserved
    return report


def test_a_parquet_file_loads_and_quarantines_what_the_same_rows_as_csv_do(tmp_path):
    by_format = {}
    for name in ("samples.csv", "samples.parquet"):
        landing = tmp_path / name / "landing"
        _samples(landing / "telemetry", name, range(3))
        _load(landing, tmp_path / name / "w.duckdb")
        warehouse = tmp_path / name / "w.duckdb"
        by_format[name] = (
            query(warehouse, f"select {SAMPLE_COLUMNS} from raw.device_samples order by all"),
            query(warehouse, "select rule from raw.quarantine"),
            query(warehouse, LEDGER)[0][1:],
        )
    assert by_format["samples.parquet"] == by_format["samples.csv"]
    rows, quarantined, ledger = by_format["samples.parquet"]
    assert len(rows) == 3 and quarantined == [("DCGM_FI_PROF_GR_ENGINE_ACTIVE.unit_range",)] and ledger == (4, 3, 1)
    warehouse = tmp_path / "samples.parquet" / "w.duckdb"
    lines = query(warehouse, "select source_line from raw.device_samples order by 1")
    assert lines == [(1,), (2,), (3,)]  # a Parquet row's line is its number in the file, from 1


def test_a_copy_of_a_retracted_parquet_file_counts_its_good_and_bad_records(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    original = _samples(landing / "telemetry", "day.parquet", range(3))
    _load(landing, warehouse)
    retract(warehouse, "telemetry/day.parquet", "wrong cluster")
    (landing / "telemetry" / "day_again.parquet").write_bytes(original.read_bytes())
    _load(landing, warehouse)
    assert query(warehouse, "select count(*) from raw.device_samples") == [(0,)]
    assert ("telemetry/day_again.parquet", 4, 0, 4) in query(warehouse, LEDGER)


def test_a_parquet_file_changed_between_its_check_and_its_read_fails_the_load_naming_it(tmp_path, monkeypatch):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    _samples(landing / "telemetry", "day.parquet", range(3), bad=False)
    _load(landing, warehouse)
    _samples(landing / "telemetry", "day2.parquet", range(4), bad=False)
    write_checked = in_database._write_checked

    def rewritten_first(*args, **kwargs):
        _samples(landing / "telemetry", "day2.parquet", range(6), bad=False)  # the exporter writes it again
        return write_checked(*args, **kwargs)

    monkeypatch.setattr(in_database, "_write_checked", rewritten_first)
    with pytest.raises(RuntimeError, match=r"telemetry/day2.parquet changed while it was loaded"):
        _load(landing, warehouse)
    assert query(warehouse, "select count(*) from raw.device_samples") == [(3,)]  # as the last load left it
    assert query(warehouse, LEDGER) == [("telemetry/day.parquet", 3, 3, 0)]
    monkeypatch.undo()
    _load(landing, warehouse)  # the next night loads it
    assert query(warehouse, "select count(*) from raw.device_samples") == [(9,)]
