"""The single entry point Dagster loads (workspace.yaml): every asset, check, job, schedule, sensor and resource.

Paths come from the environment when a run launches (``COST_LANDING_DIR``, ``COST_WAREHOUSE``), never at import.
"""

from __future__ import annotations

import dagster as dg

from cost_pipeline.dbt_setup import dbt_project, warehouse_folder_dbt_executable
from cost_pipeline.defs.dbt import DBT_GLOBAL_FLAGS, ProjectDbtCli, cost_models, held_rows_checks
from cost_pipeline.defs.freshness import freshness_checks
from cost_pipeline.defs.ingest import bookkeeping_specs, ingest_assets
from cost_pipeline.defs.monthly import monthly_after_nightly, monthly_assets, monthly_deliverables_job
from cost_pipeline.defs.publish import publish_after_failed_build, publish_assets, publish_job
from cost_pipeline.defs.resources import LandingZone, Warehouse
from cost_pipeline.defs.schedules import nightly_cost_refresh, nightly_cost_refresh_job
from cost_pipeline.defs.sensors import landing_sensors

defs = dg.Definitions(
    assets=[*ingest_assets, *bookkeeping_specs, cost_models, *publish_assets, *monthly_assets],
    asset_checks=[*freshness_checks, held_rows_checks],
    jobs=[nightly_cost_refresh_job, monthly_deliverables_job, publish_job],
    schedules=[nightly_cost_refresh],
    sensors=[*landing_sensors, monthly_after_nightly, publish_after_failed_build],
    resources={
        "landing": LandingZone(path=dg.EnvVar("COST_LANDING_DIR")),
        "warehouse": Warehouse(path=dg.EnvVar("COST_WAREHOUSE")),
        "dbt": ProjectDbtCli(
            project_dir=dbt_project,
            dbt_executable=warehouse_folder_dbt_executable(),
            global_config_flags=DBT_GLOBAL_FLAGS,
        ),
    },
    # DuckDB allows one writer process per file: every step of a run executes in one process, in order.
    executor=dg.in_process_executor,
)
