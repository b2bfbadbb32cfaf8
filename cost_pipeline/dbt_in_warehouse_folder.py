"""dbt, run from the warehouse's folder with the warehouse named by its file name (``cost-pipeline-dbt``).

dbt parses the whole project again (about 7 s on a quiet machine, 11 s on a slow one) whenever the profile's
connection differs from the one its partial-parse file was written with, and dbt-duckdb's connection includes the
warehouse's path. Run from the warehouse's folder with ``COST_WAREHOUSE`` set to the file name, a build on any
``warehouse.duckdb`` in any folder has the connection the prepared manifest's parse had (``dbt_setup``), so the
first night on a new warehouse, a test's copy or ``cost-pipeline demo --dir NEW`` re-parses only what changed.

The nightly build (dagster-dbt runs its dbt executable from the project folder, with ``DBT_PROFILES_DIR`` set) and
the manifest's parse run dbt through this. The project folder is the folder it was started in unless
``DBT_PROJECT_DIR`` or ``--project-dir`` names one. A relative ``COST_WAREHOUSE``, or none, leaves everything as
plain ``dbt`` would have it. dbt runs in this process, building only the log lines it writes (``dbt_log_lines``) and
compiling each template source once (``dbt_templates``), or, with ``COST_DBT_WARM`` set, in the process the run
started ahead of it (``dbt_warm``), which runs this same code.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from cost_pipeline.dbt_build_manifest import write_no_build_manifest
from cost_pipeline.dbt_log_lines import build_only_written_lines
from cost_pipeline.dbt_templates import remember_compiled
from cost_pipeline.dbt_warm import WARM_VARIABLE, hand_over

WAREHOUSE_VARIABLE = "COST_WAREHOUSE"


def installed_beside_python(command: str) -> str:
    """``command`` installed beside this interpreter (a venv need not be on PATH), else the one on PATH."""
    beside = Path(sys.executable).parent / command
    return str(beside) if beside.exists() else (shutil.which(command) or command)


def dbt_executable() -> str:
    return installed_beside_python("dbt")


def warehouse_folder_dbt_executable() -> str:
    """This command (``cost-pipeline-dbt``)."""
    return installed_beside_python("cost-pipeline-dbt")


def main() -> None:
    waiting = os.environ.pop(WARM_VARIABLE, "")
    if waiting:
        code = hand_over(waiting)
        if code is not None:
            sys.exit(code)
    warehouse = os.environ.get(WAREHOUSE_VARIABLE, "")
    if os.path.isabs(warehouse):
        os.environ.setdefault("DBT_PROJECT_DIR", os.getcwd())
        os.environ.setdefault("DBT_PROFILES_DIR", os.environ["DBT_PROJECT_DIR"])
        os.chdir(Path(warehouse).parent)
        os.environ[WAREHOUSE_VARIABLE] = Path(warehouse).name
    # dbt in this process, as its own `dbt` script runs it, with its log lines built only where they are written.
    build_only_written_lines()
    remember_compiled()
    write_no_build_manifest()
    from dbt.cli.main import cli

    sys.exit(cli())


if __name__ == "__main__":
    main()
