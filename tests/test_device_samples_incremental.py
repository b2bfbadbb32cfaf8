"""int_device_samples_tiered is built again only for the jobs whose inputs changed (issue 15), and what it keeps plus
what it builds is what a full build gives, whatever changed in raw: a late file for one job, that file gone, a row
held by a dbt test, a job's end, the contract's tier rule. Each change is made to raw on a copy of the demo night's
warehouse, the models up to the tiered table are run incrementally, and the table is compared with a full refresh."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, dbt_executable, dbt_project
from tests.helpers import query

TIERED = "intermediate.int_device_samples_tiered"
INPUTS = "intermediate.int_device_samples_inputs"
BUILT = "int_device_samples_tiered_built"
# A late file: one GPU of job 1003 sampled again half an interval after each of its samples; and the file gone.
LATE_FILE = (
    "insert into raw.device_samples by name select * replace ("
    "  timestamp + interval 30 second as timestamp, 'telemetry/late.csv' as source_file,"
    "  row_number() over (order by timestamp) as source_line, 'late' as file_sha256)"
    " from raw.device_samples where job_id = '1003' and gpu = 0 and hostname = 'gpu-a'",
    "insert into raw.ingested_files by name select 'device_samples' as source, 'telemetry/late.csv' as source_file,"
    " 'late' as file_sha256, count(*) as rows_in, count(*) as rows_staged, 0 as rows_quarantined"
    " from raw.device_samples where source_file = 'telemetry/late.csv'",
)
LATE_FILE_GONE = (
    "delete from raw.device_samples where source_file = 'telemetry/late.csv'",
    "delete from raw.ingested_files where source_file = 'telemetry/late.csv'",
)


def _run(warehouse: Path, tmp_path: Path, *args: str, select: str = "+int_device_samples_tiered") -> None:
    subprocess.run(
        [dbt_executable(), "run", "--quiet", "--select", select, *args] + ["--target-path", str(tmp_path / "target")],
        cwd=DBT_PROJECT_DIR,
        env={**os.environ, "COST_WAREHOUSE": str(warehouse), "DBT_LOG_PATH": str(tmp_path / "logs")},
        check=True,
        capture_output=True,
    )


def _rows(warehouse: Path) -> list[tuple]:
    return query(warehouse, f"select * from {TIERED} order by all")


def _rebuilt(warehouse: Path) -> set[str]:
    return {job for (job,) in query(warehouse, f"select item from {INPUTS} where kind = 'job' and rebuild")}


def _change(warehouse: Path, *statements: str) -> None:
    con = duckdb.connect(str(warehouse))
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()


def _incremental_equals_full(warehouse: Path, tmp_path: Path) -> set[str]:
    """Run incrementally, then compare with a full refresh; returns the jobs the incremental run built again."""
    before = _rows(warehouse)
    _run(warehouse, tmp_path)
    rebuilt, incremental = _rebuilt(warehouse), _rows(warehouse)
    assert incremental != before  # every change below changes some sample's figures
    _run(warehouse, tmp_path, "--full-refresh")
    assert incremental == _rows(warehouse)
    return rebuilt


def _job(warehouse: Path, job_id: str) -> str:
    ((key,),) = query(warehouse, f"select job_key from intermediate.int_jobs_attributed where job_id = '{job_id}'")
    return key


@pytest.fixture
def warehouse(demo_run, tmp_path: Path) -> Path:
    copy = tmp_path / "warehouse.duckdb"
    shutil.copy(demo_run.warehouse, copy)
    return copy


def test_a_night_builds_again_only_the_jobs_whose_inputs_changed(warehouse: Path, tmp_path: Path):
    _run(warehouse, tmp_path)  # the demo night's inputs are the ones kept: nothing to build again
    assert _rebuilt(warehouse) == set()
    jobs = {job for (job,) in query(warehouse, f"select item from {INPUTS} where kind = 'job'")}

    # A late file (LATE_FILE): only the job its time spans is built again, its samples now standing for half the time.
    _change(warehouse, *LATE_FILE)
    assert _incremental_equals_full(warehouse, tmp_path) == {_job(warehouse, "1003")}

    # The file gone again (retracted): the same job is built again, from the samples left.
    _change(warehouse, *LATE_FILE_GONE)
    assert _incremental_equals_full(warehouse, tmp_path) == {_job(warehouse, "1003")}

    # The tier table selected alone after the file came back: the inputs table is the last run's, so every job is
    # built again and the kept inputs are dropped; the next run with its inputs builds every job again, without it.
    _change(warehouse, *LATE_FILE)
    _run(warehouse, tmp_path, select="int_device_samples_tiered")
    alone = _rows(warehouse)
    assert not query(warehouse, f"select 1 from information_schema.tables where table_name = '{BUILT}'")
    full = tmp_path / "full.duckdb"
    shutil.copy(warehouse, full)
    _run(full, tmp_path, "--full-refresh")
    assert alone == _rows(full)
    _change(warehouse, *LATE_FILE_GONE)
    assert _incremental_equals_full(warehouse, tmp_path) == jobs

    # A row held by a dbt test: it leaves raw, the ledger counts one row less and the quarantine names it.
    _change(
        warehouse,
        "delete from raw.device_samples where source_file = 'telemetry/dcgm_b7.csv' and source_line = 2",
        "update raw.ingested_files set rows_staged = rows_staged - 1 where source_file = 'telemetry/dcgm_b7.csv'",
        "insert into raw.quarantine values ('device_samples', 'telemetry/dcgm_b7.csv', "
        " (select file_sha256 from raw.ingested_files where source_file = 'telemetry/dcgm_b7.csv'), 2,"
        " 'dbt:a_test', 'held', null)",
    )
    rebuilt = _incremental_equals_full(warehouse, tmp_path)
    assert _job(warehouse, "1001") in rebuilt and rebuilt < jobs  # the file spans several days' jobs, not all

    # A job's end moves an hour earlier: it and the jobs its old or new window overlaps are built again.
    _change(warehouse, "update raw.scheduler_jobs set end_at = end_at - interval 1 hour where job_id like '2003%'")
    assert _incremental_equals_full(warehouse, tmp_path) == {_job(warehouse, "2003")}

    # The contract's tier rule changes: every job is built again.
    _change(
        warehouse,
        "update raw.contract_parameters set value = 0.9 where name = 'effective_min_gr_engine_active'",
    )
    assert _incremental_equals_full(warehouse, tmp_path) == jobs


def _late_csv(landing: Path) -> None:
    """telemetry/late.csv, as DCGM writes the wide format: GPU 0 of gpu-a for job 1003, 30 s after each sample."""
    con = duckdb.connect()
    con.execute(
        "copy (select strftime(timestamp + interval 30 second, '%Y-%m-%dT%H:%M:%S') as timestamp,"
        " * exclude (timestamp)"
        f" from read_csv('{landing / 'telemetry' / 'dcgm_b7.csv'}') where job_id = 1003 and gpu = 0"
        f" and hostname = 'gpu-a' order by 1) to '{landing / 'telemetry' / 'late.csv'}' (header)"
    )
    con.close()


def test_a_night_with_a_late_telemetry_file_builds_its_job_again_as_a_new_warehouse_would(demo_run, tmp_path: Path):
    """The nightly job, end to end: the demo night's warehouse gets a late device-sample file for job 1003. The next
    night builds that job's tiers again, and only it, and its tier table and per-job figures equal those of a new
    warehouse that reads the same landing folder in one night."""
    from cost_pipeline.cli import run_pipeline

    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    shutil.copy(demo_run.warehouse, warehouse)
    _late_csv(landing)
    assert run_pipeline(landing, warehouse)
    assert _rebuilt(warehouse) == {_job(warehouse, "1003")}
    new = tmp_path / "new" / "warehouse.duckdb"
    new.parent.mkdir()
    assert run_pipeline(landing, new)
    for table in (TIERED, "intermediate.int_job_utilization_tiered", "marts.fct_batch_costs"):
        rows = query(warehouse, f"select * from {table} order by all")
        assert rows == query(new, f"select * from {table} order by all"), table
    late = query(warehouse, f"select count(*) from {TIERED} where represented_seconds = 30")
    assert late == [
        (query(warehouse, "select 2 * count(*) from raw.device_samples where source_file like '%late.csv'")[0][0],)
    ]


def test_the_code_fingerprint_renders_every_macro_the_two_models_call():
    """device_samples_tiered_code (macros/device_samples_tiered_state.sql) renders the project's macros the tiered
    model and the attribution view call: a change to one of them builds every job again."""
    manifest = json.loads(dbt_project.manifest_path.read_text())
    called = {
        macro.split(".")[-1]
        for name in ("int_device_samples_tiered", "int_device_samples_attributed", "stg_telemetry__device_samples")
        for macro in manifest["nodes"][f"model.cost_pipeline.{name}"]["depends_on"]["macros"]
        if macro.startswith("macro.cost_pipeline.")
    }
    fingerprint = (DBT_PROJECT_DIR / "macros" / "device_samples_tiered_state.sql").read_text()
    rendered = fingerprint.split("macro device_samples_tiered_code()")[1].split("endmacro")[0]
    called -= {"device_samples_tiered_forget", "device_samples_tiered_remember", "log_row_count"}  # hooks
    missing = {macro for macro in called if f"{macro.split('__')[-1]}(" not in rendered}  # dispatched: its name
    assert not missing, f"device_samples_tiered_code does not render {sorted(missing)}"
