"""The monthly sensor under a running daemon (issue 11): a night launched from the UI is followed by its months.

``cost-pipeline ui`` starts ``dagster dev`` (webserver and daemon) over a copy of the demo night. A run of the
nightly job is launched through the UI's GraphQL API, as its Launchpad does (one asset of it, to keep the test
short). The daemon then ticks ``monthly_after_nightly`` (RUNNING by default, nothing to switch on): when the night
succeeds, it requests the monthly partitions of the open month and of the month before it, which is not closed,
and its run launcher runs them. Each run writes its month's folder beside the warehouse.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg

from cost_pipeline.calendar_months import previous_month
from cost_pipeline.defs.monthly import monthly_deliverables_job
from cost_pipeline.defs.schedules import nightly_cost_refresh_job
from cost_pipeline.monthly import month_folder
from tests.servers import graphql, local_dagster

# A generous bound for a loaded 2-core machine: a night of one asset, a sensor tick (every 30 s) and two month runs.
FINISH_S = 420
NIGHT_TAG = "cost_pipeline/night"


def _launch(url: str, job: str, asset: dg.AssetKey) -> str:
    """Launch ``asset`` of ``job`` through the UI's GraphQL API; the run's id."""
    (repository,) = graphql(
        url, "{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }"
    )["repositoriesOrError"]["nodes"]
    path = ", ".join(f'"{part}"' for part in asset.path)
    launched = graphql(
        url,
        f"""mutation {{ launchRun(executionParams: {{
              selector: {{repositoryLocationName: "{repository["location"]["name"]}",
                         repositoryName: "{repository["name"]}", jobName: "{job}",
                         assetSelection: [{{path: [{path}]}}]}},
              runConfigData: "{{}}" }}) {{
            __typename ... on LaunchRunSuccess {{ run {{ runId }} }} ... on PythonError {{ message }}
        }} }}""",
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def test_the_daemon_runs_the_open_and_previous_months_after_a_night_launched_from_the_ui(
    demo_copy, tmp_path, monkeypatch
):
    home, warehouse = demo_copy / "warehouse.dagster", demo_copy / "warehouse.duckdb"
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    log = tmp_path / "dagster-dev.log"
    ui = [str(Path(sys.executable).parent / "cost-pipeline"), "ui", "--landing", str(demo_copy / "landing")]
    with local_dagster([*ui, "--warehouse", str(warehouse)], {}, log) as url:
        night = _launch(url, nightly_cost_refresh_job.name, dg.AssetKey(["raw", "batch_registry"]))
        deadline, months = time.monotonic() + FINISH_S, []
        while time.monotonic() < deadline:
            with dg.DagsterInstance.from_config(str(home)) as instance:
                night_run = instance.get_run_by_id(night)
                months = instance.get_runs(dg.RunsFilter(tags={NIGHT_TAG: night}))
                if night_run.is_finished and len(months) == 2 and all(run.is_finished for run in months):
                    ended = instance.get_run_record_by_id(night).end_time
                    break
            time.sleep(2)
        assert night_run.status == dg.DagsterRunStatus.SUCCESS, log.read_text()[-3000:]
        assert len(months) == 2, f"the sensor requested {len(months)} runs:\n{log.read_text()[-3000:]}"

    open_month = datetime.fromtimestamp(ended, UTC).date().replace(day=1)
    expected = {f"{month:%Y-%m}" for month in (previous_month(open_month), open_month)}
    assert {run.job_name for run in months} == {monthly_deliverables_job.name}
    assert {run.tags["dagster/partition"] for run in months} == expected
    assert all(run.status == dg.DagsterRunStatus.SUCCESS for run in months), log.read_text()[-3000:]
    for key in expected:
        folder = month_folder(warehouse, date.fromisoformat(f"{key}-01"))
        assert (folder / "marts").is_dir() and any((folder / "marts").glob("*.parquet")), sorted(folder.rglob("*"))
