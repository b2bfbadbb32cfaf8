"""Raw is kept, and one bad input never costs the night: rows of a file gone from the landing folder stay in raw and
the file is named missing; a retracted file loads nothing; a file that cannot be opened (a directory, a FIFO, a
link out of the landing folder, no read permission) is quarantined whole while the rest loads; an unusable warehouse
is one line and exit code 5. Ingest-level and CLI-level only: no whole night here."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from cost_pipeline.cli import main
from cost_pipeline.contract import load_contract
from cost_pipeline.contract.schemas import DEVICE_SAMPLE_BASE_COLUMNS
from cost_pipeline.defs.ingest import ASSETS_BY_TABLE as ASSETS
from cost_pipeline.defs.resources import LandingZone, Warehouse
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_source, sources
from tests.helpers import REGISTRY_HEADER, query

REGISTRY = REGISTRY_HEADER + "B-1,p,g,t,d1,m1,c1,cfg1,v1,,,,,\nB-2,p,g,t,d1,m1,c1,cfg1,v1,,,,,\n"
SAMPLES = (
    ",".join(name for name, _ in DEVICE_SAMPLE_BASE_COLUMNS)
    + "\n"
    + "".join(f"2026-11-01T00:0{m}:00,gpu-a,0,1,0.9,0.8,0.5,1e8,1e8,300\n" for m in range(3))
)
LEDGER = (
    "select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files where source = ? order by 1"
)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _materialize(landing: Path, warehouse: Path, name: str) -> dg.ExecuteInProcessResult:
    resources = {"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))}
    result = dg.materialize([ASSETS[name]], resources=resources, instance=dg.DagsterInstance.ephemeral())
    assert result.success
    return result


def _check(result: dg.ExecuteInProcessResult, name: str) -> dg.AssetCheckEvaluation:
    (evaluation,) = (
        e.asset_check_evaluation_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION" and e.asset_check_evaluation_data.check_name == name
    )
    return evaluation


def test_a_deleted_file_keeps_its_rows_and_a_warning_names_it_with_the_night_it_went(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    _write(landing / "registry" / "batches.csv", REGISTRY)
    gone = _write(
        landing / "registry" / "batches_2026-12.csv", REGISTRY.replace("B-1,", "B-3,").replace("B-2,", "B-4,")
    )
    first = _materialize(landing, warehouse, "batch_registry")
    assert _check(first, "no_missing_files").passed

    gone.unlink()
    second = _materialize(landing, warehouse, "batch_registry")
    assert query(warehouse, "select batch_id, source_file from raw.batch_registry order by 1") == [
        ("B-1", "registry/batches.csv"),
        ("B-2", "registry/batches.csv"),
        ("B-3", "registry/batches_2026-12.csv"),
        ("B-4", "registry/batches_2026-12.csv"),
    ]
    check = _check(second, "no_missing_files")
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    (since,) = query(warehouse, "select missing_since from raw.ingested_files where missing_since is not null")[0]
    assert check.metadata["missing_since"].value == {"registry/batches_2026-12.csv": since.isoformat(" ", "seconds")}

    _materialize(landing, warehouse, "batch_registry")  # a third night: still kept, still missing since the second
    assert query(
        warehouse, "select source_file, missing_since from raw.ingested_files where missing_since is not null"
    )[0] == ("registry/batches_2026-12.csv", since)
    assert len(query(warehouse, "select * from raw.batch_registry")) == 4


def test_a_changed_file_replaces_its_rows_and_a_moved_file_counts_once(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    path = _write(landing / "registry" / "batches.csv", REGISTRY)
    _materialize(landing, warehouse, "batch_registry")
    _write(path, REGISTRY.replace("B-2,", "B-5,"))  # the same name, other bytes: a redelivery
    _materialize(landing, warehouse, "batch_registry")
    assert query(warehouse, "select batch_id from raw.batch_registry order by 1") == [("B-1",), ("B-5",)]
    path.rename(path.with_name("batches_moved.csv"))  # the same bytes under another name
    _materialize(landing, warehouse, "batch_registry")
    assert query(warehouse, "select batch_id, source_file from raw.batch_registry order by 1") == [
        ("B-1", "registry/batches_moved.csv"),
        ("B-5", "registry/batches_moved.csv"),
    ]
    assert query(warehouse, "select count(*) from raw.ingested_files where missing_since is not null") == [(0,)]


def test_retract_needs_a_reason_and_a_known_file_then_the_next_load_leaves_the_file_out(tmp_path, capsys):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    _write(landing / "registry" / "batches.csv", REGISTRY)
    _write(landing / "registry" / "batches_bad.csv", REGISTRY.replace("B-1,", "B-6,").replace("B-2,", "B-7,"))
    _materialize(landing, warehouse, "batch_registry")
    capsys.readouterr()

    assert main(["retract", "registry/batches_bad.csv", "--warehouse", str(warehouse)]) == 2
    assert main(["retract", "registry/batches_bad.csv", "--reason", "  ", "--warehouse", str(warehouse)]) == 2
    assert main(["retract", "registry/nothing.csv", "--reason", "wrong", "--warehouse", str(warehouse)]) == 6
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 3 and "--reason" in errors[0] and "unknown file registry/nothing.csv" in errors[2]

    argv = ["retract", "registry/batches_bad.csv", "--reason", "sent by mistake", "--by", "ops"]
    assert main([*argv, "--warehouse", str(warehouse)]) == 0
    assert "retracted registry/batches_bad.csv (batch_registry: 2 rows)" in capsys.readouterr().out
    assert query(warehouse, "select source_file, rows_retracted, reason, retracted_by from raw.retractions") == [
        ("registry/batches_bad.csv", 2, "sent by mistake", "ops")
    ]
    _materialize(landing, warehouse, "batch_registry")  # the file is still there: it loads nothing
    assert query(warehouse, "select batch_id from raw.batch_registry order by 1") == [("B-1",), ("B-2",)]
    assert query(warehouse, LEDGER, ["batch_registry"]) == [("registry/batches.csv", 2, 2, 0)]
    (landing / "registry" / "batches_bad.csv").unlink()  # and gone, it is not kept either
    _materialize(landing, warehouse, "batch_registry")
    assert query(warehouse, "select batch_id from raw.batch_registry order by 1") == [("B-1",), ("B-2",)]
    assert main([*argv, "--warehouse", str(warehouse)]) == 6
    assert "was retracted on" in capsys.readouterr().err


def _unopenable(folder: Path, outside: Path, suffix: str) -> dict[str, str]:
    """A directory, a FIFO and a link out of the landing folder, each where a file of the source should be."""
    (folder / f"batches_directory{suffix}").mkdir(parents=True)
    os.mkfifo(folder / f"batches_fifo{suffix}")
    (folder / f"batches_link{suffix}").symlink_to(outside)
    return {
        f"batches_directory{suffix}": "file is a directory where a file should be",
        f"batches_fifo{suffix}": "file is not a regular file (a FIFO, socket or device)",
        f"batches_link{suffix}": "file is a link that points outside the landing folder",
    }


@pytest.mark.parametrize(
    ("name", "folder", "suffix", "good"),
    [("batch_registry", "registry", ".csv", REGISTRY), ("device_samples", "telemetry", ".csv", SAMPLES)],
    ids=["read-in-python", "read-by-duckdb"],
)
def test_a_file_that_cannot_be_opened_is_quarantined_whole_and_the_rest_loads(tmp_path, name, folder, suffix, good):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    _write(landing / folder / f"batches_good{suffix}", good)
    outside = _write(tmp_path / "secret" / f"batches{suffix}", good.replace("B-1,", "B-9,").replace("0.9", "0.7"))
    refused = {f"{folder}/{k}": v for k, v in _unopenable(landing / folder, outside, suffix).items()}
    if os.geteuid() != 0:  # root reads a file whatever its mode, so this case means nothing under root
        _write(landing / folder / f"batches_no_permission{suffix}", good).chmod(0)
        refused[f"{folder}/batches_no_permission{suffix}"] = "file cannot be opened (Permission denied)"

    result = _materialize(landing, warehouse, name)
    assert _check(result, "rows_conserved").passed
    rows = query(warehouse, f"select distinct source_file from raw.{name}")
    assert rows == [(f"{folder}/batches_good{suffix}",)]  # the link's target (0.7, B-9) was never read
    quarantined = query(warehouse, "select source_file, line, rule, message from raw.quarantine order by 1")
    assert quarantined == [
        (f, 0, "file_unopenable", f"{message}; nothing in it was loaded") for f, message in sorted(refused.items())
    ]
    ledger = query(warehouse, "select source_file, file_sha256 from raw.ingested_files where rows_staged = 0")
    assert sorted(ledger) == [(f, "unread") for f in sorted(refused)]


def test_a_warehouse_of_random_bytes_a_directory_or_unwritable_is_one_line_and_exit_code_5(tmp_path, capsys):
    landing = tmp_path / "landing"
    _write(landing / "registry" / "batches.csv", REGISTRY)
    corrupt = tmp_path / "corrupt.duckdb"
    corrupt.write_bytes(os.urandom(1 << 16))
    folder = tmp_path / "folder.duckdb"
    folder.mkdir()
    truncated = tmp_path / "truncated.duckdb"  # a real warehouse cut short, as a full disk or a killed copy leaves it
    con = duckdb.connect(str(truncated))
    con.execute("create table t as select range as i from range(100000)")
    con.close()
    with open(truncated, "r+b") as handle:
        handle.truncate(truncated.stat().st_size // 2)
    a_file = _write(tmp_path / "a_file", "not a folder")  # a warehouse that cannot be written: no folder to hold it
    cases = (
        (corrupt, "cannot be used"),
        (folder, "is a directory"),
        (truncated, "cannot be used"),
        (a_file / "w.duckdb", f"{a_file} is a file where a folder of its path should be"),
    )
    for warehouse, what in cases:
        assert main(["run", "--landing", str(landing), "--warehouse", str(warehouse)]) == 5
        captured = capsys.readouterr()
        assert captured.err.splitlines() == [captured.err.strip()] and what in captured.err
        assert str(warehouse) in captured.err and "Traceback" not in captured.out + captured.err
        assert main(["retract", "registry/batches.csv", "--reason", "x", "--warehouse", str(warehouse)]) == 5
        assert len(capsys.readouterr().err.splitlines()) == 1


@pytest.mark.parametrize(
    ("name", "folder", "good"),
    [("batch_registry", "registry", REGISTRY), ("device_samples", "telemetry", SAMPLES)],
    ids=["read-in-python", "read-by-duckdb"],
)
def test_a_copy_of_a_retracted_file_under_another_name_loads_nothing(tmp_path, capsys, name, folder, good):
    """A retraction is by content as well as by name: the same bytes under another name are quarantined whole
    (``retracted_content``, naming the retraction), whether the retracted file is still there or gone."""
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    _write(landing / folder / "batches.csv", good)
    _materialize(landing, warehouse, name)
    argv = ["retract", f"{folder}/batches.csv", "--reason", "wrong cluster", "--warehouse", str(warehouse)]
    assert main(argv) == 0
    capsys.readouterr()
    _write(landing / folder / "batches_again.csv", good)  # the same bytes, renamed by a careless exporter
    result = _materialize(landing, warehouse, name)
    assert _check(result, "rows_conserved").passed
    assert query(warehouse, f"select count(*) from raw.{name}") == [(0,)]
    records = len(good.splitlines()) - 1
    sql = "select line, rule, message from raw.quarantine where source_file = ?"
    ((line, rule, message),) = query(warehouse, sql, [f"{folder}/batches_again.csv"])
    assert (line, rule) == (0, "retracted_content")
    assert message.startswith(f"file holds the same bytes as {folder}/batches.csv, retracted on ")
    assert message.endswith(f"(raw.retractions); its {records} records were not loaded")
    assert query(warehouse, LEDGER, [name]) == [(f"{folder}/batches_again.csv", records, 0, records)]
    (landing / folder / "batches.csv").unlink()  # the retracted file gone: its copy still loads nothing
    _materialize(landing, warehouse, name)
    assert query(warehouse, f"select count(*) from raw.{name}") == [(0,)]
    assert query(warehouse, LEDGER, [name]) == [(f"{folder}/batches_again.csv", records, 0, records)]


@pytest.mark.parametrize("name", sorted(sources()))
def test_every_source_opens_its_files_through_the_one_gate(tmp_path, name):
    """Every registered source, read in Python or by DuckDB, refuses a link out of the landing folder, a directory
    and a FIFO where its file should be: each quarantined whole, never read (``records.refusal``)."""
    source = sources()[name]
    landing = tmp_path / "landing"
    folder = landing / source.folder
    folder.mkdir(parents=True)
    secret = _write(tmp_path / "secret" / "file", "secret,bytes\n1,2\n")
    pattern = source.patterns[0].removeprefix("**/")  # a file directly in the folder matches a "**/" pattern too
    refused = {
        pattern.replace("*", "_link", 1): lambda p: p.symlink_to(secret),
        pattern.replace("*", "_directory", 1): lambda p: p.mkdir(),
        pattern.replace("*", "_fifo", 1): os.mkfifo,
    }
    for file_name, make in refused.items():
        make(folder / file_name)
    planted = {p.relative_to(folder).as_posix() for p in source.files(landing)}
    assert planted == set(refused), "the planted names match the source's pattern"
    con = connect(tmp_path / "w.duckdb", readable_dir=landing)
    try:
        report = load_source(con, landing, source, load_contract())
    finally:
        con.close()
    assert report.conserved and report.rows_staged == 0
    quarantined = query(tmp_path / "w.duckdb", "select source_file, line, rule from raw.quarantine order by 1")
    assert quarantined == sorted((f"{source.folder}/{f}", 0, "file_unopenable") for f in refused)
