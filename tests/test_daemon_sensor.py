"""The monthly sensor under a running daemon (issue 11): a night launched from the UI is followed by its months.

``cost-pipeline ui`` starts ``dagster dev`` (webserver and daemon) over a copy of the demo night. A run of the
nightly job is launched through the UI's GraphQL API, as its Launchpad does (one asset of it, to keep the test
short). The daemon then ticks ``monthly_after_nightly`` (RUNNING by default, nothing to switch on): when the night
succeeds, it requests the monthly partitions of the open month and of the month before it while it is not closed
(``months_to_refresh``), and its run launcher runs them. Each run writes its month's folder beside the warehouse.
"""

from __future__ import annotations

import shutil
import sys
import time
from datetime import UTC, date, datetime
from pathlib import Path

import dagster as dg

from cost_pipeline.defs.monthly import monthly_after_nightly, monthly_deliverables_job, months_to_refresh
from cost_pipeline.defs.schedules import nightly_cost_refresh_job
from cost_pipeline.monthly import month_folder
from tests.servers import dequeue_quickly, graphql, local_dagster

# A generous bound for each wait on a loaded 2-core machine: the daemon's first tick, a night of one asset, a
# sensor tick (every 30 s) and the month runs; each wait looks every POLL_S.
FINISH_S, POLL_S = 420, 1
NIGHT_TAG = "cost_pipeline/night"
BACKFILLED = "2026-10"  # the contract's first month: no night's sensor requests it once 2026-12 has begun


def _repository(url: str) -> str:
    """The selector of the code location's repository, as GraphQL takes it."""
    (repository,) = graphql(
        url, "{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }"
    )["repositoriesOrError"]["nodes"]
    return f'repositoryLocationName: "{repository["location"]["name"]}", repositoryName: "{repository["name"]}"'


def _ticked(url: str, sensor: str) -> bool:
    """Whether the daemon has ticked ``sensor`` once: a run-status sensor's first tick only sets its cursor to the
    newest run event, so a night that ended before it would never be followed."""
    found = graphql(
        url,
        f"""{{ sensorOrError(sensorSelector: {{{_repository(url)}, sensorName: "{sensor}"}}) {{
            ... on Sensor {{ sensorState {{ ticks(limit: 1) {{ status }} }} }} }} }}""",
    )["sensorOrError"]
    return bool(found["sensorState"]["ticks"])


def _launch(url: str, job: str, asset: dg.AssetKey) -> str:
    """Launch ``asset`` of ``job`` through the UI's GraphQL API, as the Launchpad does; the run's id."""
    path = ", ".join(f'"{part}"' for part in asset.path)
    launched = graphql(
        url,
        f"""mutation {{ launchRun(executionParams: {{
              selector: {{{_repository(url)}, jobName: "{job}", assetSelection: [{{path: [{path}]}}]}},
              runConfigData: "{{}}" }}) {{
            __typename ... on LaunchRunSuccess {{ run {{ runId }} }} ... on PythonError {{ message }}
        }} }}""",
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def _backfill(url: str, job: str, month: str) -> str:
    """Launch a backfill of ``job``'s partition ``month`` through the UI's GraphQL API; the backfill's id."""
    launched = graphql(
        url,
        f"""mutation {{ launchPartitionBackfill(backfillParams: {{
              selector: {{partitionSetName: "{job}_partition_set", repositorySelector: {{{_repository(url)}}}}},
              partitionNames: ["{month}"], forceSynchronousSubmission: true }}) {{
            __typename ... on LaunchBackfillSuccess {{ backfillId }} ... on PythonError {{ message }}
        }} }}""",
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    return launched["backfillId"]


def _wait(until, what: str, log: Path) -> None:
    deadline = time.monotonic() + FINISH_S
    while not until():
        assert time.monotonic() < deadline, f"{what} within {FINISH_S} s:\n{log.read_text()[-3000:]}"
        time.sleep(POLL_S)


def test_the_daemon_runs_the_open_and_previous_months_after_a_night_launched_from_the_ui(
    demo_copy, tmp_path, monkeypatch
):
    home, warehouse = demo_copy / "warehouse.dagster", demo_copy / "warehouse.duckdb"
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    log = tmp_path / "dagster-dev.log"
    ui = [str(Path(sys.executable).parent / "cost-pipeline"), "ui", "--landing", str(demo_copy / "landing")]
    # Which months are closed, read from a copy: the warehouse is busy while the runs are.
    closed = shutil.copyfile(warehouse, tmp_path / "closed.duckdb")
    dequeue_quickly(home)  # the runs start sooner; still one at a time:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 1
    with local_dagster([*ui, "--warehouse", str(warehouse)], {}, log) as url:
        _wait(lambda: _ticked(url, monthly_after_nightly.name), "the daemon did not tick the monthly sensor", log)
        night = _launch(url, nightly_cost_refresh_job.name, dg.AssetKey(["raw", "batch_registry"]))

        def night_ended() -> bool:
            with dg.DagsterInstance.from_config(str(home)) as instance:
                return instance.get_run_by_id(night).is_finished

        _wait(night_ended, "the night did not end", log)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            assert instance.get_run_by_id(night).status == dg.DagsterRunStatus.SUCCESS, log.read_text()[-3000:]
            ended = instance.get_run_record_by_id(night).end_time
        expected = set(months_to_refresh(closed, datetime.fromtimestamp(ended, UTC).date()))
        assert expected  # the open month at least, whatever the date

        def months() -> list[dg.DagsterRun]:
            with dg.DagsterInstance.from_config(str(home)) as instance:
                return list(instance.get_runs(dg.RunsFilter(tags={NIGHT_TAG: night})))

        _wait(
            lambda: len(months()) == len(expected) and all(run.is_finished for run in months()),
            f"the sensor did not request and run {len(expected)} months",
            log,
        )
        # A backfill of one month the sensor left alone, launched from the UI as its partitions page does: that
        # month is written, and no other month's folder is touched.
        refreshed = {key: month_folder(warehouse, date.fromisoformat(f"{key}-01")).readlink() for key in expected}
        backfilled = _backfill(url, monthly_deliverables_job.name, BACKFILLED)

        def backfill_runs() -> list[dg.DagsterRun]:
            with dg.DagsterInstance.from_config(str(home)) as instance:
                return list(instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfilled})))

        _wait(lambda: backfill_runs() and all(run.is_finished for run in backfill_runs()), "the backfill", log)

    runs = months()
    assert {run.job_name for run in runs} == {monthly_deliverables_job.name}
    assert {run.tags["dagster/partition"] for run in runs} == expected
    assert all(run.status == dg.DagsterRunStatus.SUCCESS for run in runs), log.read_text()[-3000:]
    for key in expected:
        folder = month_folder(warehouse, date.fromisoformat(f"{key}-01"))
        assert any((folder / "marts").glob("*.parquet")), sorted(folder.rglob("*"))
        assert folder.readlink() == refreshed[key]  # the backfill of another month left it as it was
    (backfill,) = backfill_runs()
    assert backfill.status == dg.DagsterRunStatus.SUCCESS and backfill.tags["dagster/partition"] == BACKFILLED
    assert BACKFILLED not in expected
    assert (month_folder(warehouse, date.fromisoformat(f"{BACKFILLED}-01")) / "journal.csv").is_file()
