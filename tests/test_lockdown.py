"""DuckDB locked down for ingestion (R20): a connection opened with the landing folder as its one readable
directory cannot read elsewhere, copy out, attach, install or load extensions, or change a setting, and the
real loaders (pandas registration, read_csv, read_parquet) still work inside it."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from cost_pipeline.contract import load_contract
from cost_pipeline.contract.schemas import DEVICE_SAMPLE_BASE_COLUMNS
from cost_pipeline.defs.resources import Warehouse
from cost_pipeline.ingest.contract_tables import load_contract_tables
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_source, sources
from cost_pipeline.ingest.telemetry import load_device_samples
from tests.helpers import REGISTRY_HEADER

SAMPLE_HEADER = ",".join(name for name, _ in DEVICE_SAMPLE_BASE_COLUMNS)
REGISTRY = REGISTRY_HEADER + "B-1,p,g,t,d1,m1,c1,cfg1,v1,,,,,\nB-2,p,g,t,d1,m1,c1,cfg1,v1,,,,,\n"


def _sample(ts: str, tensor: str = "0.5") -> str:
    return f"{ts},gpu-a,0,1,0.9,0.8,{tensor},1e8,1e8,300"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def site(tmp_path: Path) -> dict[str, Path]:
    """A landing folder with a telemetry CSV, a Parquet file and a registry; files and a database outside it."""
    landing = tmp_path / "landing"
    _write(
        landing / "telemetry" / "a.csv",
        "\n".join([SAMPLE_HEADER, _sample("2026-11-01T00:00:00"), _sample("2026-11-01T00:01:00")]) + "\n",
    )
    staging_csv = _write(
        tmp_path / "outside" / "s.csv",
        "\n".join([SAMPLE_HEADER, _sample("2026-11-01T00:02:00"), _sample("2026-11-01T00:03:00", tensor="-0.5")])
        + "\n",
    )
    con = duckdb.connect()
    con.read_csv(str(staging_csv), header=True).write_parquet(str(landing / "telemetry" / "b.parquet"))
    con.close()
    _write(landing / "registry" / "batches.csv", REGISTRY)
    secret = _write(tmp_path / "outside" / "secret.csv", "name,rate\nalice,123\n")
    sibling = _write(tmp_path / "landing_other" / "x.csv", "a\n1\n")  # shares the landing folder's prefix
    other_db = tmp_path / "outside" / "other.duckdb"
    duckdb.connect(str(other_db)).close()
    return {
        "landing": landing,
        "secret": secret,
        "sibling": sibling,
        "other_db": other_db,
        "warehouse": tmp_path / "w.duckdb",
        "outside": tmp_path / "outside",
    }


@pytest.fixture
def locked(site):
    con = connect(site["warehouse"], readable_dir=site["landing"])
    yield con
    con.close()


def _refused(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> str:
    with pytest.raises(duckdb.Error) as error:
        con.execute(sql, params or []).fetchall()
    return str(error.value)


def test_settings_are_applied_in_order_and_locked(locked, site):
    settings = dict(
        locked.execute(
            "select name, value from duckdb_settings() where name in "
            "('allowed_directories', 'enable_external_access', 'lock_configuration')"
        ).fetchall()
    )
    assert settings["enable_external_access"] == "false"
    assert settings["lock_configuration"] == "true"
    assert str(site["landing"].resolve()) in settings["allowed_directories"]


def test_reading_outside_the_landing_folder_is_refused(locked, site):
    for path in (site["secret"], site["sibling"], site["landing"] / ".." / "outside" / "secret.csv", "/etc/passwd"):
        assert "Permission Error" in _refused(locked, "select * from read_csv(?)", [str(path)])
    assert "Permission Error" in _refused(locked, "select * from read_text(?)", [str(site["secret"])])
    assert "Permission Error" in _refused(locked, "select * from glob(?)", [str(site["outside"] / "*")])


def test_a_symlink_in_the_landing_folder_pointing_outside_is_refused(locked, site):
    link = site["landing"] / "telemetry" / "link.csv"
    link.symlink_to(site["secret"])
    assert "Permission Error" in _refused(locked, "select * from read_csv(?)", [str(link)])


def test_copy_to_a_file_is_refused(locked, site):
    target = site["outside"] / "leak.csv"
    assert "Permission Error" in _refused(locked, "copy (select 42 as x) to '" + str(target) + "'")
    assert "Permission Error" in _refused(locked, "copy raw.ingested_files to '" + str(target) + "' (format csv)")
    assert "Permission Error" in _refused(locked, "export database '" + str(site["outside"] / "dump") + "'")
    assert not target.exists() and not (site["outside"] / "dump").exists()


def test_attach_of_another_database_is_refused(locked, site):
    assert "Permission Error" in _refused(locked, "attach '" + str(site["other_db"]) + "' as other")
    assert "Permission Error" in _refused(locked, "attach '" + str(site["outside"] / "new.duckdb") + "' as fresh")
    assert not (site["outside"] / "new.duckdb").exists()


def test_install_and_load_of_extensions_are_refused(locked, site):
    assert "Permission Error" in _refused(locked, "install httpfs")
    assert "Permission Error" in _refused(locked, "load httpfs")
    assert "Permission Error" in _refused(locked, "load '" + str(site["outside"] / "evil.duckdb_extension") + "'")


@pytest.mark.parametrize(
    "statement",
    [
        "set enable_external_access = true",
        "set allowed_directories = ['/']",
        "set lock_configuration = false",
        "reset enable_external_access",
        "set threads = 1",
        "set autoinstall_known_extensions = true",
    ],
)
def test_changing_a_setting_is_refused(locked, statement):
    assert "configuration has been locked" in _refused(locked, statement)


def test_every_connection_to_the_locked_database_is_restricted(locked, site):
    cursor = locked.cursor()
    assert "Permission Error" in _refused(cursor, "select * from read_csv(?)", [str(site["secret"])])
    assert "locked" in _refused(cursor, "set enable_external_access = true")


def test_telemetry_loads_csv_and_parquet_inside_the_landing_folder(locked, site):
    report = load_device_samples(locked, site["landing"])
    assert (report.files, report.rows_in, report.rows_staged, report.rows_quarantined) == (2, 4, 3, 1)
    assert locked.execute("select source_file, source_line from raw.device_samples order by 1, 2").fetchall() == [
        ("telemetry/a.csv", 2),
        ("telemetry/a.csv", 3),
        ("telemetry/b.parquet", 1),
    ]
    assert locked.execute("select source_file, line, rule from raw.quarantine").fetchall() == [
        ("telemetry/b.parquet", 2, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE.unit_range")
    ]


def test_pandas_registration_still_works_for_validated_sources_and_contract_tables(locked, site):
    report = load_source(locked, site["landing"], sources()["batch_registry"], load_contract())
    assert (report.rows_in, report.rows_staged, report.rows_quarantined) == (2, 2, 0)
    assert locked.execute("select batch_id from raw.batch_registry order by 1").fetchall() == [("B-1",), ("B-2",)]
    counts = load_contract_tables(locked)
    assert counts["enumerations"] > 0 and counts["parameters"] > 0
    assert locked.execute("select count(*) from raw.contract_parameters").fetchone()[0] == counts["parameters"]


def test_a_plain_connection_is_not_restricted_and_a_closed_locked_one_leaves_no_trace(site):
    con = connect(site["warehouse"])
    try:
        assert con.execute("select count(*) from read_csv(?)", [str(site["secret"])]).fetchone() == (1,)
    finally:
        con.close()
    connect(site["warehouse"], readable_dir=site["landing"]).close()
    con = connect(site["warehouse"])  # a later step (dbt, the CLI report) opens the same file afresh
    try:
        assert con.execute("select count(*) from read_csv(?)", [str(site["secret"])]).fetchone() == (1,)
        con.execute("set threads = 2")
    finally:
        con.close()


def test_the_warehouse_resource_locks_down_when_given_the_landing_root(site):
    warehouse = Warehouse(path=str(site["warehouse"]))
    con = warehouse.connect(readable=site["landing"])
    try:
        assert "Permission Error" in _refused(con, "select * from read_csv(?)", [str(site["secret"])])
        assert load_device_samples(con, site["landing"]).rows_staged == 3
    finally:
        con.close()
    con = warehouse.connect()
    try:
        assert con.execute("select count(*) from read_csv(?)", [str(site["secret"])]).fetchone() == (1,)
    finally:
        con.close()
