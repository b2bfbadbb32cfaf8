"""The project's table and view materializations on DuckDB (dbt_project/macros/duckdb_replace_materializations.sql)
drop the old relation and create the new one in one transaction: a build that fails keeps the old relation and its
rows, a view over a rebuilt table keeps working, an enforced contract still types and constrains the table.

A project of three models, beside the test, with that one macro file: what it shows is the materializations, not
the cost models.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, dbt_executable

MACRO = DBT_PROJECT_DIR / "macros" / "duckdb_replace_materializations.sql"

PROJECT = """\
name: probe
version: "1.0.0"
config-version: 2
profile: probe
flags:
  send_anonymous_usage_stats: false
"""

PROFILES = """\
probe:
  target: duckdb
  outputs:
    duckdb:
      type: duckdb
      path: "{warehouse}"
      threads: 1
"""

CONTRACTED = """\
version: 2
models:
  - name: contracted
    config:
      contract: {enforced: true}
    columns:
      - name: amount
        data_type: decimal(18, 2)
        constraints: [{type: not_null}]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "macros").mkdir()
    shutil.copyfile(MACRO, tmp_path / "macros" / MACRO.name)
    (tmp_path / "models").mkdir()
    (tmp_path / "dbt_project.yml").write_text(PROJECT, encoding="utf-8")
    (tmp_path / "profiles.yml").write_text(PROFILES.format(warehouse=tmp_path / "w.duckdb"), encoding="utf-8")
    (tmp_path / "models" / "_models.yml").write_text(CONTRACTED, encoding="utf-8")
    _model(tmp_path, "base", "table", "select 1 as a")
    _model(tmp_path, "over_base", "view", "select a from {{ ref('base') }}")
    _model(tmp_path, "contracted", "table", "select cast(12.5 as decimal(18, 2)) as amount")
    return tmp_path


def _model(project: Path, name: str, materialized: str, sql: str) -> None:
    text = f"{{{{ config(materialized='{materialized}') }}}}\n{sql}\n"
    (project / "models" / f"{name}.sql").write_text(text, encoding="utf-8")


def _dbt(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [dbt_executable(), *args, "--project-dir", str(project), "--profiles-dir", str(project)],
        cwd=project,
        env={**os.environ, "DBT_LOG_PATH": str(project / "logs"), "DBT_TARGET_PATH": str(project / "target")},
        capture_output=True,
        text=True,
    )


def _query(project: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(project / "w.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_a_failed_build_keeps_the_old_table_and_a_rebuilt_table_keeps_its_views(project):
    built = _dbt(project, "run")
    assert built.returncode == 0, built.stdout[-3000:]
    assert _query(project, "select a from over_base") == [(1,)]

    _model(project, "base", "table", "select cast(error('the build breaks') as integer) as a")
    failed = _dbt(project, "run", "--select", "base")
    assert failed.returncode == 1 and "the build breaks" in failed.stdout
    assert _query(project, "select a from base") == [(1,)]  # rolled back: the old table and its rows
    assert _query(project, "select a from over_base") == [(1,)]

    _model(project, "base", "table", "select 2 as a")
    rebuilt = _dbt(project, "run", "--select", "base")
    assert rebuilt.returncode == 0, rebuilt.stdout[-3000:]
    # The view was not built again: it reads the new table.
    assert _query(project, "select a from over_base") == [(2,)]
    names = _query(project, "select table_name from information_schema.tables order by 1")
    assert names == [("base",), ("contracted",), ("over_base",)]  # no temporary or backup relation is left


def test_an_enforced_contract_types_and_constrains_the_table(project):
    built = _dbt(project, "run")
    assert built.returncode == 0, built.stdout[-3000:]
    assert _query(
        project, "select data_type, is_nullable from information_schema.columns where table_name = 'contracted'"
    ) == [("DECIMAL(18,2)", "NO")]
    _model(project, "contracted", "table", "select cast(null as decimal(18, 2)) as amount")
    failed = _dbt(project, "run", "--select", "contracted")
    assert failed.returncode == 1  # the not-null constraint refuses the row
    assert _query(project, "select amount from contracted") == [(Decimal("12.50"),)]  # the old row, kept
