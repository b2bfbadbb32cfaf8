"""``cost-pipeline docs --site FILE --warehouse W``: the dbt docs site as one HTML file that works offline.

``dbt docs generate --static`` writes the project's docs with the manifest and the warehouse's catalog (every
relation's columns and types, read from W) inside a single ``static_index.html``: no server, no CDN, no request
out (dbt's usage tracking is off in ``dbt_project.yml``, which the page obeys). It is written beside ``FILE`` and
moved into place, so a reader never sees half a file.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from cost_pipeline.command_error import CommandError
from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, dbt_executable
from cost_pipeline.duckdb_memory import dbt_environment


class DocsSiteError(CommandError):
    """dbt could not write the docs site; the message is dbt's last error line."""


def write_site(warehouse: Path, out: Path) -> Path:
    """Write the docs site of the project and ``warehouse`` to ``out``; returns ``out``."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".docs-site-", dir=out.parent) as scratch:
        env = {
            **os.environ,
            **dbt_environment(None),
            "COST_WAREHOUSE": str(warehouse.resolve()),
            "DBT_LOG_PATH": str(Path(scratch) / "logs"),
        }
        finished = subprocess.run(
            [dbt_executable(), "docs", "generate", "--static", "--quiet", "--target-path", scratch],
            cwd=DBT_PROJECT_DIR,
            env=env,
            capture_output=True,
            text=True,
        )
        site = Path(scratch) / "static_index.html"
        if finished.returncode != 0 or not site.exists():
            said = [line.strip() for line in (finished.stdout + finished.stderr).splitlines() if line.strip()]
            raise DocsSiteError(f"dbt docs generate failed: {said[-1] if said else 'no output'}")
        os.replace(site, out)
    return out
