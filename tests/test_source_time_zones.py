"""Every source reads its times the same whatever the host's time zone (issue 10): a naive time is UTC, an offset or
``Z`` is honoured. Each source's files (the demo's, and the real exports of tests/data: FOCUS with offsets and
``Z``, Slurm's JSON, DCGM scrapes, a Prometheus range query) are loaded twice, on a host in UTC and on a host in
Asia/Kolkata (+05:30), and the raw rows and the quarantine must be the same to the microsecond. A loader that read a
naive time in the host's zone, or dropped an offset, would shift its rows by five and a half hours on one of them."""

from __future__ import annotations

import shutil
import time
from datetime import datetime
from pathlib import Path

import pytest

from cost_pipeline.contract import load_contract
from cost_pipeline.demo import write_demo_landing
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_source, sources
from tests.helpers import query
from tests.test_telemetry_formats import METRICS, _range_query

# Its module-scoped fixture runs once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("source_time_zones")

DATA = Path(__file__).parent / "data"
# Real exports written by others, each in the folder of the source that reads it.
REAL_EXPORTS = {
    "billing": sorted((DATA / "focus").rglob("*.csv")),
    "scheduler": [DATA / "slurm" / "sacct_json_v0.0.43.json"],
    "telemetry": sorted((DATA / "dcgm").glob("*.prom")) + [DATA / "prometheus" / "query_range_up.json"],
}


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = write_demo_landing(tmp_path_factory.mktemp("zones") / "landing")
    for target, files in REAL_EXPORTS.items():
        for number, path in enumerate(files):
            shutil.copy(path, folder / target / f"real_{number:02d}_{path.name}")
    # No public range query of DCGM fields exists (tests/data/prometheus/README.md): one built from the HTTP API
    # page, its instants as Prometheus gives them (seconds since the epoch, one with a fraction).
    series = [
        {"metric": {"__name__": metric, "gpu": "0", "Hostname": "node-02", "hpc_job": "4300"}, "values": values}
        for metric, value in METRICS.items()
        for values in [[[1796032800, str(value)], [1796032801.5, str(value)]]]
    ]
    (folder / "telemetry" / "node-02_day.json").write_text(_range_query(series), encoding="utf-8")
    return folder


def _load(landing: Path, warehouse: Path, name: str, zone: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        con = connect(warehouse, readable_dir=landing)
        try:
            report = load_source(con, landing, sources()[name], load_contract())
        finally:
            con.close()
    finally:
        monkeypatch.undo()
        time.tzset()
    assert report.conserved
    return query(warehouse, f'select * from raw."{name}" order by all') + query(
        warehouse, "select * from raw.quarantine order by all"
    )


@pytest.mark.parametrize("name", sorted(sources()))
def test_a_source_reads_the_same_times_on_a_host_in_utc_and_in_kolkata(tmp_path, landing, name, monkeypatch):
    in_utc = _load(landing, tmp_path / "utc.duckdb", name, "UTC", monkeypatch)
    in_kolkata = _load(landing, tmp_path / "kolkata.duckdb", name, "Asia/Kolkata", monkeypatch)
    assert in_utc == in_kolkata
    assert in_utc, "the source loaded rows (or quarantined some): the comparison compared something"


def test_a_time_followed_by_a_zone_name_or_a_word_is_quarantined_and_spaces_around_a_time_are_not(tmp_path):
    """DuckDB's cast to timestamp drops whatever follows the time (``CET``, ``EST``, any word) and pandas guesses
    at a zone name; spaces after an offset kept it from being seen. Both read 09:00 as UTC, an hour or five off,
    with exit 0. A zone name is no ISO 8601 zone: the row is quarantined with its rule, in SQL (device samples) and
    in Python (training steps) alike; an offset with spaces around it is honoured."""
    landing = tmp_path / "landing"
    (landing / "telemetry").mkdir(parents=True)
    (landing / "steps").mkdir()
    metrics = "0.5,0.5,0.1,1000000.0,1000000.0,300.0"
    (landing / "telemetry" / "samples.csv").write_text(
        "timestamp,hostname,gpu,job_id,DCGM_FI_PROF_GR_ENGINE_ACTIVE,DCGM_FI_PROF_SM_ACTIVE,"
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE,DCGM_FI_PROF_NVLINK_TX_BYTES,DCGM_FI_PROF_NVLINK_RX_BYTES,"
        "DCGM_FI_DEV_POWER_USAGE\n"
        f" 2026-11-02T09:00:00+01:00 ,gpu-a,0,1001,{metrics}\n"
        f"2026-11-02T09:00:00 CET,gpu-a,1,1001,{metrics}\n"
        f"2026-11-02T09:00:00 EST,gpu-a,2,1001,{metrics}\n",
        encoding="utf-8",
    )
    step = (
        '{{"batch_id": "B-7", "job_id": "1002", "step": {step}, "started_at": "{started}", '
        '"ended_at": "2026-11-03T00:20:00Z", "committed": true, "discarded_reason": null, "samples": 512, '
        '"tokens": 1000000, "config_version": "c", "data_version": "d"}}\n'
    )
    (landing / "steps" / "steps.jsonl").write_text(
        step.format(step=1, started="2026-11-03T00:10:00 EST")
        + step.format(step=2, started=" 2026-11-03T01:10:00+01:00 "),
        encoding="utf-8",
    )
    warehouse = tmp_path / "w.duckdb"
    con = connect(warehouse, readable_dir=landing)
    try:
        for name in ("device_samples", "training_steps"):
            assert load_source(con, landing, sources()[name], load_contract()).conserved
    finally:
        con.close()
    assert query(warehouse, 'select gpu, "timestamp" from raw.device_samples') == [(0, datetime(2026, 11, 2, 8))]
    assert query(warehouse, "select step, started_at from raw.training_steps") == [(2, datetime(2026, 11, 3, 0, 10))]
    assert query(warehouse, "select source_file, line, rule from raw.quarantine order by 1, 2") == [
        ("steps/steps.jsonl", 1, "started_at.coerce_dtype"),
        ("telemetry/samples.csv", 3, "timestamp.parseable"),
        ("telemetry/samples.csv", 4, "timestamp.parseable"),
    ]
