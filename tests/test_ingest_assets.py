"""Ingest assets materialised into a temporary DuckDB: conservation, quarantine naming file/line/rule,
whole-file failures that leave the rest of the night loading, telemetry checked inside the database."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from cost_pipeline.contract import Contract, load_contract
from cost_pipeline.contract.schemas import DEVICE_SAMPLE_BASE_COLUMNS, training_steps
from cost_pipeline.defs.ingest import ASSETS_BY_TABLE as ASSETS
from cost_pipeline.defs.resources import LandingZone, Warehouse
from cost_pipeline.ingest.lib.records import ParsedFile
from cost_pipeline.ingest.lib.validate import validate_rows
from tests.helpers import REGISTRY_HEADER, query

SAMPLE_HEADER = ",".join(name for name, _ in DEVICE_SAMPLE_BASE_COLUMNS)


def materialize(
    landing: Path,
    warehouse: Path,
    name: str,
    run_config: dict | None = None,
    instance: dg.DagsterInstance | None = None,
) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [ASSETS[name]],
        resources={"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))},
        run_config=run_config,
        instance=instance or dg.DagsterInstance.ephemeral(),
    )


def logged_messages(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """Everything the run wrote to the Dagster event log: user messages and event metadata."""
    return [f"{entry.user_message} {entry.dagster_event or ''}" for entry in instance.all_logs(run_id)]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def conservation(warehouse: Path, source: str) -> tuple[int, int, int]:
    return query(
        warehouse,
        f"select sum(rows_in), sum(rows_staged), sum(rows_quarantined) from raw.ingested_files "
        f"where source = '{source}'",
    )[0]


def check_results(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {
        e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data.passed
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }


def test_bad_registry_file_is_quarantined_whole_and_the_good_one_loads(tmp_path):
    landing = tmp_path / "landing"
    write(
        landing / "registry" / "batches.csv",
        REGISTRY_HEADER + "B-1,p,g,t,d1,m1,c1,cfg1,v1,,,,,\n"
        "B-2,p,g,t,d1,m1,c1,cfg1,v9,,,,,\n"  # unknown contract version
        "B-1,p,g,t,d1,m1,c1,cfg1,v1,,,,,\n"  # repeated key
        "B-3,p,g\n",
    )  # short line
    write(landing / "registry" / "batches_extra.csv", "id;name\nB-4;x\n")
    result = materialize(landing, tmp_path / "w.duckdb", "batch_registry")
    assert result.success
    assert query(tmp_path / "w.duckdb", "select batch_id from raw.batch_registry") == [("B-1",)]
    assert query(tmp_path / "w.duckdb", "select source_file, line, rule from raw.quarantine order by 1, 2") == [
        ("registry/batches.csv", 3, "contract_version.isin"),
        ("registry/batches.csv", 4, "batch_id.unique"),
        ("registry/batches.csv", 5, "csv_field_count"),
        ("registry/batches_extra.csv", 0, "csv_header"),
    ]
    rows_in, staged, quarantined = conservation(tmp_path / "w.duckdb", "batch_registry")
    assert (rows_in, staged, quarantined) == (5, 1, 4)
    assert check_results(result) == {
        "rows_conserved": True,
        "no_quarantined_rows": False,
        "quarantine_not_growing": True,
        "no_missing_files": True,
        "source_loaded": True,
        "delivered_on_time": True,  # evaluated in the load's step
    }


def test_a_replica_list_exported_without_its_price_column_is_refused_whole(tmp_path):
    """A blank gpu_hour_price is an owned replica priced at the internal GPU-hour price. A re-export of the list
    without the column read as blank in every row, and as the newest delivery it turned the rented assistant-large
    replica owned (its month's spend 27,440.00 -> 18,670.41). The file is quarantined whole, naming the column; its
    lines count as quarantined, and the list that says the price stays."""
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    run = "R-L1,assistant-large,8,2026-11-01T00:00:00,2026-12-01T00:00:00"
    write(
        landing / "serving" / "replicas.csv", f"replica_id,model,gpus,started_at,ended_at,gpu_hour_price\n{run},4.00\n"
    )
    write(
        landing / "serving" / "replicas_2026-11-30.csv",
        f"replica_id,model,gpus,started_at,ended_at\n{run}\nR-S1,assistant-small,2,2026-11-01T00:00:00,2026-12-01T00:00:00\n",
    )
    assert materialize(landing, warehouse, "serving_replicas").success
    assert query(warehouse, "select source_file, gpu_hour_price from raw.serving_replicas") == [
        ("serving/replicas.csv", Decimal("4.00"))
    ]
    assert query(warehouse, "select source_file, line, rule, message from raw.quarantine") == [
        (
            "serving/replicas_2026-11-30.csv",
            0,
            "csv_header",
            "header lacks required column(s): gpu_hour_price; its 2 records were not loaded",
        )
    ]
    assert conservation(warehouse, "serving_replicas") == (3, 1, 2)


def test_quarantine_messages_name_file_line_and_rule_but_never_values(tmp_path):
    landing = tmp_path / "landing"
    step = {
        "batch_id": "B-1",
        "job_id": "1",
        "step": 1,
        "started_at": "2026-11-01T00:00:00",
        "ended_at": "2026-11-01T00:10:00",
        "committed": True,
        "discarded_reason": "SECRET-CANARY-REASON",
        "samples": 1,
        "tokens": 5,
    }
    write(landing / "steps" / "steps.jsonl", json.dumps(step) + "\nnot json\n[1, 2]\n")
    instance = dg.DagsterInstance.ephemeral()
    result = materialize(landing, tmp_path / "w.duckdb", "training_steps", instance=instance)
    messages = query(tmp_path / "w.duckdb", "select line, rule, message from raw.quarantine order by line")
    assert [(m[0], m[1]) for m in messages] == [(1, "discarded_reason.isin"), (2, "json_syntax"), (3, "json_object")]
    assert all("SECRET-CANARY" not in m[2] for m in messages)
    logged = logged_messages(instance, result.run_id)
    assert any("steps/steps.jsonl, line 1: rule discarded_reason.isin" in m for m in logged)
    assert not any("SECRET-CANARY" in m for m in logged)


def test_a_changed_contract_enumeration_changes_validation_without_code():
    v1 = load_contract("v1")
    document = json.loads(json.dumps(v1.document))
    document["discard_reasons"]["eval_leak"] = "Evaluation data leaked into training."
    v2 = Contract(version="v2", document=document)
    row = {
        "batch_id": "B-1",
        "job_id": "1",
        "step": 1,
        "started_at": "2026-11-01T00:00:00",
        "ended_at": "2026-11-01T00:01:00",
        "committed": True,
        "discarded_reason": "eval_leak",
        "source_line": 1,
    }
    under_v1 = ParsedFile(path=Path("x"), sha256="", rows=[dict(row)])
    under_v2 = ParsedFile(path=Path("x"), sha256="", rows=[dict(row)])
    assert len(validate_rows(under_v1, training_steps(v1))) == 0 and len(under_v1.rejections) == 1
    assert len(validate_rows(under_v2, training_steps(v2))) == 1 and not under_v2.rejections


def test_scheduler_config_reads_headerless_semicolon_exports(tmp_path):
    landing = tmp_path / "landing"
    write(
        landing / "scheduler" / "jobs.txt",
        "77;COMPLETED;2026-11-03T00:00:00;2026-11-03T01:00:00;01:00:00;"
        "gres/gpu=2;gres/gpu=2;batch=B-7,phase=analysis\n",
    )
    fields = ["JobID", "State", "Start", "End", "Timelimit", "ReqTRES", "AllocTRES", "Comment"]
    result = materialize(
        landing,
        tmp_path / "w.duckdb",
        "scheduler_jobs",
        {"ops": {"raw__scheduler_jobs": {"config": {"sacct_delimiter": ";", "sacct_fields": fields}}}},
    )
    assert result.success
    assert query(tmp_path / "w.duckdb", "select job_id, gpus_allocated, phase from raw.scheduler_jobs") == [
        ("77", 2, "analysis")
    ]


def _sample(ts: str, gr: str = "0.9", tensor: str = "0.5", gpu: str = "0") -> str:
    return f"{ts},gpu-a,{gpu},1,{gr},0.8,{tensor},1e8,1e8,300"


def test_device_samples_are_checked_in_the_database_with_line_numbers(tmp_path):
    landing = tmp_path / "landing"
    lines = [
        SAMPLE_HEADER,
        _sample("2026-11-01T00:00:00"),
        _sample("2026-11-01T00:01:00", gr="1.7"),  # activity outside 0-1
        "2026-11-01T00:02:00,gpu-a,0,1",  # too few columns
        _sample("not-a-time"),
        _sample("2026-11-01T00:04:00", gpu="-1"),
        "2026-11-01T00:05:00,gpu-a,0,1,0.5,0.5,0.5,1,1,1,extra",  # too many columns
        _sample("2026-11-01T00:06:00"),
    ]
    write(landing / "telemetry" / "a.csv", "\n".join(lines) + "\n")
    write(landing / "telemetry" / "wrong.csv", "time,host\n1,2\n")
    write(landing / "telemetry" / "broken.parquet", "this is not parquet")
    warehouse = tmp_path / "w.duckdb"
    result = materialize(landing, warehouse, "device_samples")
    assert result.success
    assert query(warehouse, "select source_line from raw.device_samples order by 1") == [(2,), (8,)]
    assert query(warehouse, "select source_file, line, rule from raw.quarantine order by 1, 2") == [
        ("telemetry/a.csv", 3, "DCGM_FI_PROF_GR_ENGINE_ACTIVE.unit_range"),
        ("telemetry/a.csv", 4, "csv_structure"),
        ("telemetry/a.csv", 5, "timestamp.parseable"),
        ("telemetry/a.csv", 6, "gpu.index"),
        ("telemetry/a.csv", 7, "csv_structure"),
        ("telemetry/broken.parquet", 0, "file_format"),
        ("telemetry/wrong.csv", 0, "file_format"),
    ]
    rows_in, staged, quarantined = conservation(warehouse, "device_samples")
    assert rows_in == staged + quarantined == 9


def test_device_samples_from_parquet(tmp_path):
    landing = tmp_path / "landing"
    csv_path = write(
        tmp_path / "s.csv",
        "\n".join([SAMPLE_HEADER, _sample("2026-11-01T00:00:00"), _sample("2026-11-01T00:01:00", tensor="-0.5")])
        + "\n",
    )
    (landing / "telemetry").mkdir(parents=True)
    con = duckdb.connect()
    con.read_csv(str(csv_path), header=True).write_parquet(str(landing / "telemetry" / "s.parquet"))
    con.close()
    warehouse = tmp_path / "w.duckdb"
    assert materialize(landing, warehouse, "device_samples").success
    assert query(warehouse, "select count(*) from raw.device_samples") == [(1,)]
    assert query(warehouse, "select line, rule from raw.quarantine") == [
        (2, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE.unit_range")
    ]


@pytest.mark.parametrize("name", sorted(ASSETS))
def test_every_source_loads_an_empty_landing_folder(tmp_path, name):
    result = materialize(tmp_path / "landing", tmp_path / "w.duckdb", name)
    assert result.success
    assert query(tmp_path / "w.duckdb", f'select count(*) from raw."{name}"') == [(0,)]


def test_a_growing_quarantine_fails_its_check(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    instance = dg.DagsterInstance.ephemeral()
    registry = landing / "registry" / "batches.csv"
    write(registry, REGISTRY_HEADER + "B-1,p,g,t,d1,m1,c1,cfg1,v1,,,,,\nB-2,p,g\n")
    assert check_results(materialize(landing, warehouse, "batch_registry", instance=instance))["quarantine_not_growing"]
    write(registry, REGISTRY_HEADER + "B-1,p,g,t,d1,m1,c1,cfg1,v1,,,,,\nB-2,p,g\nB-3,p,g\n")
    grown = materialize(landing, warehouse, "batch_registry", instance=instance)
    assert grown.success  # the night still loads
    assert check_results(grown) == {
        "rows_conserved": True,
        "no_quarantined_rows": False,
        "quarantine_not_growing": False,
        "no_missing_files": True,
        "source_loaded": True,
        "delivered_on_time": True,  # evaluated in the load's step
    }
