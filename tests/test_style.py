"""The style checks CI runs: ruff (lint and format) on the Python, sqlfluff on the dbt project's SQL.

Each tool is the one installed in this venv beside ``sys.executable``, configured by ``pyproject.toml`` and
``.sqlfluff``; ``.pre-commit-config.yaml`` runs the same tools before a commit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


def _run(tool: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VENV_BIN / tool), *args], cwd=ROOT, capture_output=True, text=True, env=env)


def test_ruff_lint_is_clean() -> None:
    result = _run("ruff", "check", ".")
    assert result.returncode == 0, f"ruff check found problems (fix them, or `ruff check --fix`):\n{result.stdout}"


def test_ruff_format_is_applied() -> None:
    result = _run("ruff", "format", "--check", ".")
    assert result.returncode == 0, f"files not formatted; run `.venv/bin/ruff format`:\n{result.stdout[-3000:]}"


def test_sqlfluff_lint_is_clean(demo_run, tmp_path: Path) -> None:
    """Every model and singular test is rendered by the dbt templater and passes the rules of ``.sqlfluff``.

    The templater compiles against a warehouse (``identical_lines_once`` reads its raw table's columns), so it gets a
    copy of the demo warehouse; dbt's target folder goes to the temporary directory, away from the manifest the
    Dagster definitions read."""
    assert demo_run.succeeded
    warehouse = tmp_path / "lint.duckdb"
    shutil.copyfile(demo_run.warehouse, warehouse)
    env = {**os.environ, "COST_WAREHOUSE": str(warehouse), "DBT_TARGET_PATH": str(tmp_path / "target")}
    result = _run(
        "sqlfluff", "lint", "dbt_project/models", "dbt_project/tests", "--format", "json", "--nofail", env=env
    )
    assert result.returncode == 0, f"sqlfluff did not run:\n{result.stderr[-3000:]}"
    files = json.loads(result.stdout)

    not_rendered = [f["filepath"] for f in files if not f["statistics"]["segments"]]
    assert not not_rendered, f"sqlfluff could not render {not_rendered[:10]}:\n{result.stderr[-3000:]}"
    expected = {
        p.relative_to(ROOT).as_posix()
        for folder in ("models", "tests")
        for p in (ROOT / "dbt_project" / folder).rglob("*.sql")
        if "generic" not in p.parts
    }
    assert {f["filepath"] for f in files} == expected
    violations = [
        f"{f['filepath']}:{v['start_line_no']}: {v['code']} {v['description']}" for f in files for v in f["violations"]
    ]
    assert not violations, (
        "sqlfluff found violations (`.venv/bin/sqlfluff fix <file>` fixes layout ones):\n" + "\n".join(violations)
    )


def test_no_fetchone_in_the_package() -> None:
    """Every DuckDB result the package reads is read to its end (``[(rows,)] = con.execute(...).fetchall()``).

    DuckDB 2.x leaves a result read by ``fetchone()`` unfinished, and the connection then refuses ``register()`` and
    ``sql()`` ("connection has an unfinished result from execute()"): a LiteLLM requests Parquet file whose doubtful
    rows went to pandera was refused whole so (``request_lines._company``)."""
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{number}: {line.strip()}"
        for path in sorted((ROOT / "cost_pipeline").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if ".fetchone(" in line
    ]
    assert not found, (
        "fetchone() leaves a DuckDB 2.x result open, and register()/sql() on the connection then fail; read the "
        "result to its end, e.g. `[(rows,)] = con.execute(...).fetchall()`:\n" + "\n".join(found)
    )
