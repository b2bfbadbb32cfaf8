"""The nightly refresh of every asset: ingest, then every dbt model and test, then publishing.

The monthly deliverables (group ``monthly``, ``defs.monthly``) are partitioned by month, so they are not in this
unpartitioned job: the ``monthly_after_nightly`` sensor requests their open months after a night succeeds.
"""

from __future__ import annotations

import dagster as dg

nightly_cost_refresh_job = dg.define_asset_job(
    "nightly_cost_refresh_job",
    selection=dg.AssetSelection.all() - dg.AssetSelection.groups("monthly"),
    description="Load every landing source, validate it against the contract, rebuild every mart, publish them.",
)

nightly_cost_refresh = dg.ScheduleDefinition(
    name="nightly_cost_refresh",
    job=nightly_cost_refresh_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
