"""The file ledger (R16): the same bytes under a new name load 0 new rows and are reported as duplicates,
for the small sources (pandera-validated) and for device samples (checked inside DuckDB)."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import duckdb

from cost_pipeline.contract import load_contract
from cost_pipeline.contract.schemas import DEVICE_SAMPLE_BASE_COLUMNS
from cost_pipeline.defs.ingest import ASSETS_BY_TABLE as ASSETS
from cost_pipeline.defs.resources import LandingZone, Warehouse
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_source, sources
from cost_pipeline.ingest.telemetry import load_device_samples
from tests.helpers import REGISTRY_HEADER, query

REGISTRY = REGISTRY_HEADER + (
    "B-1,p,g,t,d1,m1,c1,cfg1,v1,,,,,\nB-2,p,g,t,d1,m1,c1,cfg1,v1,,,,,\nB-3,p,g,t,d1,m1,c1,cfg1,v9,,,,,\n"
)  # unknown contract version: quarantined once, not twice
SAMPLE_HEADER = ",".join(name for name, _ in DEVICE_SAMPLE_BASE_COLUMNS)
LEDGER = (
    "select source_file, rows_in, rows_staged, rows_quarantined, duplicate_of from raw.ingested_files "
    "where source = ? order by source_file"
)


def _sample(ts: str, gr: str = "0.9") -> str:
    return f"{ts},gpu-a,0,1,{gr},0.8,0.5,1e8,1e8,300"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _materialize(landing: Path, warehouse: Path, name: str) -> dg.ExecuteInProcessResult:
    resources = {"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))}
    return dg.materialize([ASSETS[name]], resources=resources, instance=dg.DagsterInstance.ephemeral())


def _checks(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {
        e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data.passed
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }


def test_a_registry_file_copied_under_a_new_name_loads_its_rows_once(tmp_path):
    landing = tmp_path / "landing"
    _write(landing / "registry" / "batches.csv", REGISTRY)
    shutil.copyfile(landing / "registry" / "batches.csv", landing / "registry" / "batches_resent.csv")
    warehouse = tmp_path / "w.duckdb"

    result = _materialize(landing, warehouse, "batch_registry")
    assert result.success
    assert _checks(result)["rows_conserved"] is True
    assert query(warehouse, "select batch_id, source_file from raw.batch_registry order by 1") == [
        ("B-1", "registry/batches.csv"),
        ("B-2", "registry/batches.csv"),
    ]
    assert query(warehouse, "select source_file, line, rule from raw.quarantine") == [
        ("registry/batches.csv", 4, "contract_version.isin")
    ]
    assert query(warehouse, LEDGER, ["batch_registry"]) == [
        ("registry/batches.csv", 3, 2, 1, None),
        ("registry/batches_resent.csv", 0, 0, 0, "registry/batches.csv"),
    ]
    sha = query(warehouse, "select distinct file_sha256 from raw.ingested_files")
    assert len(sha) == 1  # both names recorded with the same hash

    con = connect(warehouse, readable_dir=landing)
    try:
        report = load_source(con, landing, sources()["batch_registry"], load_contract())
    finally:
        con.close()
    assert (report.files, report.duplicate_files) == (2, 1)
    assert (report.rows_in, report.rows_staged, report.rows_quarantined) == (3, 2, 1) and report.conserved
    assert report.duplicates == [("registry/batches_resent.csv", "registry/batches.csv")]


def test_the_first_file_in_sorted_order_wins_and_files_with_other_bytes_still_load(tmp_path):
    landing = tmp_path / "landing"
    _write(landing / "registry" / "batches_b.csv", REGISTRY)
    _write(landing / "registry" / "batches_a.csv", REGISTRY)
    _write(landing / "registry" / "batches_c.csv", REGISTRY.replace("B-1,", "B-4,").replace("B-2,", "B-5,"))
    warehouse = tmp_path / "w.duckdb"
    assert _materialize(landing, warehouse, "batch_registry").success
    assert query(warehouse, LEDGER, ["batch_registry"]) == [
        ("registry/batches_a.csv", 3, 2, 1, None),
        ("registry/batches_b.csv", 0, 0, 0, "registry/batches_a.csv"),
        ("registry/batches_c.csv", 3, 2, 1, None),
    ]
    assert query(warehouse, "select batch_id from raw.batch_registry order by 1") == [
        ("B-1",),
        ("B-2",),
        ("B-4",),
        ("B-5",),
    ]


def test_a_telemetry_csv_copied_under_a_new_name_is_not_staged_again(tmp_path):
    landing = tmp_path / "landing"
    _write(
        landing / "telemetry" / "node1.csv",
        "\n".join(
            [
                SAMPLE_HEADER,
                _sample("2026-11-01T00:00:00"),
                _sample("2026-11-01T00:01:00", gr="1.5"),
                _sample("2026-11-01T00:02:00"),
            ]
        )
        + "\n",
    )
    shutil.copyfile(landing / "telemetry" / "node1.csv", landing / "telemetry" / "node1_again.csv")
    _write(landing / "telemetry" / "broken.parquet", "not parquet")
    _write(landing / "telemetry" / "broken_too.parquet", "not parquet")
    warehouse = tmp_path / "w.duckdb"

    result = _materialize(landing, warehouse, "device_samples")
    assert result.success
    assert _checks(result)["rows_conserved"] is True
    assert query(warehouse, "select source_file, source_line from raw.device_samples order by 1, 2") == [
        ("telemetry/node1.csv", 2),
        ("telemetry/node1.csv", 4),
    ]
    assert query(warehouse, "select source_file, line, rule from raw.quarantine order by 1, 2") == [
        ("telemetry/broken.parquet", 0, "file_format"),
        ("telemetry/node1.csv", 3, "DCGM_FI_PROF_GR_ENGINE_ACTIVE.unit_range"),
    ]
    assert query(warehouse, LEDGER, ["device_samples"]) == [
        ("telemetry/broken.parquet", 1, 0, 1, None),
        ("telemetry/broken_too.parquet", 0, 0, 0, "telemetry/broken.parquet"),
        ("telemetry/node1.csv", 3, 2, 1, None),
        ("telemetry/node1_again.csv", 0, 0, 0, "telemetry/node1.csv"),
    ]

    con = connect(warehouse, readable_dir=landing)
    try:
        report = load_device_samples(con, landing)
    finally:
        con.close()
    assert (report.files, report.duplicate_files) == (4, 2)
    assert (report.rows_in, report.rows_staged, report.rows_quarantined) == (4, 2, 2) and report.conserved
    assert sorted(report.duplicates) == [
        ("telemetry/broken_too.parquet", "telemetry/broken.parquet"),
        ("telemetry/node1_again.csv", "telemetry/node1.csv"),
    ]


def test_reloading_the_same_landing_folder_gives_the_same_ledger(tmp_path):
    landing = tmp_path / "landing"
    _write(landing / "registry" / "batches.csv", REGISTRY)
    shutil.copyfile(landing / "registry" / "batches.csv", landing / "registry" / "batches_copy.csv")
    warehouse = tmp_path / "w.duckdb"
    assert _materialize(landing, warehouse, "batch_registry").success
    first = query(warehouse, "select * from raw.ingested_files order by all")
    assert _materialize(landing, warehouse, "batch_registry").success
    assert query(warehouse, "select * from raw.ingested_files order by all") == first
    assert query(warehouse, "select count(*) from raw.batch_registry") == [(2,)]


def test_a_warehouse_with_the_old_ledger_gains_the_duplicate_column(tmp_path):
    warehouse = tmp_path / "w.duckdb"
    con = duckdb.connect(str(warehouse))
    con.execute("create schema raw")
    con.execute(
        "create table raw.ingested_files (source varchar not null, source_file varchar not null, "
        "file_sha256 varchar not null, rows_in bigint not null, rows_staged bigint not null, "
        "rows_quarantined bigint not null)"
    )
    con.execute("insert into raw.ingested_files values ('batch_registry', 'registry/old.csv', 'x', 1, 1, 0)")
    con.close()
    landing = tmp_path / "landing"
    _write(landing / "registry" / "batches.csv", REGISTRY)
    shutil.copyfile(landing / "registry" / "batches.csv", landing / "registry" / "batches_copy.csv")
    assert _materialize(landing, warehouse, "batch_registry").success
    assert query(warehouse, LEDGER, ["batch_registry"])[1:] == [
        ("registry/batches_copy.csv", 0, 0, 0, "registry/batches.csv"),
        ("registry/old.csv", 1, 1, 0, None),  # gone from the landing folder: raw keeps its row (missing_since)
    ]
