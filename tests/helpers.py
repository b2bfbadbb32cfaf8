"""Small helpers the test modules share."""

from __future__ import annotations

from pathlib import Path

import duckdb


def query(warehouse: str | Path, sql: str, params: list | None = None) -> list[tuple]:
    """Rows of ``sql`` on a read-only connection to ``warehouse``, closed before returning."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def dbt_show(tmp_path: Path, sql: str, env: dict[str, str]) -> dict:
    """The one row ``dbt show --inline sql`` returns, run on the project with ``env`` (its own target and logs)."""
    import json
    import subprocess

    from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, dbt_executable

    shown = subprocess.run(
        [dbt_executable(), "show", "--quiet", "--output", "json", "--inline", sql]
        + ["--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR)]
        + ["--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs")],
        cwd=DBT_PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    (row,) = json.loads(shown.stdout)["show"]
    return row
