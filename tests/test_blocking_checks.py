"""A failed blocking contract check stops every downstream asset: no dbt model is built on half-validated data."""

from __future__ import annotations

import dagster as dg
import duckdb

from cost_pipeline.ingest.lib.warehouse import IngestReport


def test_a_failed_conservation_check_stops_the_marts(demo_run, tmp_path, monkeypatch):
    real = IngestReport.conserved
    monkeypatch.setattr(
        IngestReport,
        "conserved",
        property(lambda report: False if report.source == "training_steps" else real.fget(report)),
    )
    from cost_pipeline.cli import run_pipeline

    warehouse = tmp_path / "warehouse.duckdb"
    instance_dir = tmp_path / "dagster_home"
    instance_dir.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(instance_dir))
    assert not run_pipeline(demo_run.landing, warehouse)

    instance = dg.DagsterInstance.get()
    (run,) = instance.get_runs()
    materialized = {
        e.dagster_event.asset_key.to_user_string()
        for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
    }
    assert "raw/training_steps" in materialized  # the source itself loaded
    assert not any(key.startswith(("staging/", "intermediate/", "marts/")) for key in materialized)
    con = duckdb.connect(str(warehouse), read_only=True)
    schemas = {s for (s,) in con.execute("select distinct table_schema from information_schema.tables").fetchall()}
    con.close()
    assert "marts" not in schemas
