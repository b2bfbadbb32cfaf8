"""Where the dbt project is, which dbt runs it, and how its manifest is prepared.

Kept apart from ``defs/dbt.py`` because ``@dbt_assets`` needs the manifest at import: the CLI and the test
session call ``prepare_manifest`` first, explicitly.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from dagster_dbt import DbtProject

DBT_PROJECT_DIR = Path(__file__).resolve().parents[1] / "dbt_project"

dbt_project = DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR)


def dbt_executable() -> str:
    """The dbt installed beside this interpreter (a venv need not be on PATH), else the one on PATH."""
    beside = Path(sys.executable).parent / "dbt"
    return str(beside) if beside.exists() else (shutil.which("dbt") or "dbt")


def prepare_manifest() -> Path:
    """Run ``dbt parse`` so target/manifest.json matches the project; returns the manifest path."""
    subprocess.run(
        [dbt_executable(), "parse", "--quiet", "--project-dir", str(DBT_PROJECT_DIR),
         "--profiles-dir", str(DBT_PROJECT_DIR)],
        check=True, cwd=DBT_PROJECT_DIR,
    )
    return dbt_project.manifest_path
