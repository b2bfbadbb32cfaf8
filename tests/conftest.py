"""Test session setup: the dbt manifest is prepared once, explicitly, before Dagster definitions are imported."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.dbt_setup import prepare_manifest
from tests.helpers import query


def pytest_sessionstart(session: pytest.Session) -> None:
    prepare_manifest()


@dataclass(frozen=True)
class DemoRun:
    landing: Path
    warehouse: Path
    succeeded: bool

    def query(self, sql: str, params: list | None = None) -> list[tuple]:
        return query(self.warehouse, sql, params)

    def row(self, sql: str, params: list | None = None) -> dict:
        con = duckdb.connect(str(self.warehouse), read_only=True)
        try:
            cursor = con.execute(sql, params or [])
            names = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        finally:
            con.close()
        assert len(rows) == 1, f"expected one row, got {len(rows)}"
        return dict(zip(names, rows[0], strict=True))


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """The whole nightly job on the built-in demo scenario, once per session."""
    from cost_pipeline.cli import run_pipeline
    from cost_pipeline.demo import write_demo_landing

    root = tmp_path_factory.mktemp("demo")
    landing = write_demo_landing(root / "landing")
    warehouse = root / "warehouse.duckdb"
    return DemoRun(landing, warehouse, run_pipeline(landing, warehouse))
