"""The instance beside the warehouse writes Dagster's own event log files through kept connections
(cost_pipeline.event_log): Dagster's default storage (``dagster dev``, the daemon) reads everything it wrote, and a
``dagster.yaml`` naming a storage of its own is obeyed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from cost_pipeline.dagster_home import _event_log_override, dagster_home, warehouse_instance
from cost_pipeline.event_log import KeptConnectionEventLogStorage


@dg.asset
def counted() -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"dagster/row_count": 3})


@dg.asset_check(asset=counted)
def counted_is_three() -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=True)


def _journal_mode(database: Path) -> str:
    with sqlite3.connect(database) as connection:
        return connection.execute("pragma journal_mode").fetchone()[0]


def test_what_the_kept_connections_wrote_reads_back_through_dagsters_own_storage(tmp_path, monkeypatch):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    warehouse = tmp_path / "warehouse.duckdb"
    run_ids = []
    for _ in range(2):
        with warehouse_instance(warehouse) as instance:
            assert isinstance(instance.event_log_storage, KeptConnectionEventLogStorage)
            result = dg.materialize([counted, counted_is_three], instance=instance)
            assert result.success
            run_ids.append(result.run_id)
            with instance.event_log_storage.run_connection(result.run_id) as connection:
                assert connection.exec_driver_sql("pragma synchronous").scalar() == 1  # NORMAL: no fsync per commit

    home = dagster_home(warehouse)
    with dg.DagsterInstance.from_config(str(home)) as instance:  # Dagster's default SQLite storage
        assert type(instance.event_log_storage).__name__ == "SqliteEventLogStorage"
        assert [run.run_id for run in instance.get_runs()] == run_ids[::-1]
        latest = instance.get_latest_materialization_event(dg.AssetKey("counted"))
        assert latest.run_id == run_ids[1]
        assert latest.asset_materialization.metadata["dagster/row_count"].value == 3
        checks = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey("counted"), "counted_is_three"), limit=5
        )
        assert [check.run_id for check in checks] == run_ids[::-1]
        assert all(len(instance.all_logs(run_id)) > 10 for run_id in run_ids)

    # synchronous=NORMAL cannot damage a database only in write-ahead-log mode, which Dagster sets on creation
    databases = [home / "history" / "runs" / f"{name}.db" for name in ("index", *run_ids)]
    assert [_journal_mode(database) for database in databases] == ["wal"] * 3


def test_a_dagster_yaml_that_names_its_own_storage_is_obeyed(tmp_path):
    assert _event_log_override(tmp_path)["event_log_storage"]["class"] == "KeptConnectionEventLogStorage"
    (tmp_path / "dagster.yaml").write_text("concurrency:\n  runs:\n    max_concurrent_runs: 1\n", encoding="utf-8")
    assert _event_log_override(tmp_path)["event_log_storage"]["config"] == {
        "base_dir": str(tmp_path / "history" / "runs")
    }
    (tmp_path / "dagster.yaml").write_text(f"storage:\n  sqlite:\n    base_dir: {tmp_path / 'own'}\n", encoding="utf-8")
    assert _event_log_override(tmp_path) == {}


def test_a_table_of_the_index_is_looked_up_until_found_then_remembered(tmp_path):
    storage = KeptConnectionEventLogStorage(str(tmp_path / "runs"))
    lookups = []
    real = SqliteEventLogStorage.has_table

    def counted_lookup(self, table_name):
        lookups.append(table_name)
        return real(self, table_name)

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(SqliteEventLogStorage, "has_table", counted_lookup)
            assert storage.has_table("asset_check_executions") and storage.has_table("asset_check_executions")
            assert not storage.has_table("added_later") and not storage.has_table("added_later")
            with sqlite3.connect(tmp_path / "runs" / "index.db") as connection:
                connection.execute("create table added_later (x int)")
            assert storage.has_table("added_later") and storage.has_table("added_later")
        assert lookups == ["asset_check_executions", "added_later", "added_later", "added_later"]
    finally:
        storage.dispose()
