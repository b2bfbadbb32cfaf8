"""Landing sensors (cursor = file hashes, not names), freshness checks over the warehouse's arrivals, and owners
and descriptions on every asset."""

from __future__ import annotations

import copy
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from cost_pipeline.contract import Contract, load_contract
from cost_pipeline.contract.due import parse_due
from cost_pipeline.definitions import defs
from cost_pipeline.defs.freshness import CHECK, Freshness, delivery_result, freshness_checks
from cost_pipeline.defs.ingest import ASSETS_BY_TABLE
from cost_pipeline.defs.resources import LandingZone, Warehouse
from cost_pipeline.defs.sensors import Seen, files_sensor, landing_sensors
from cost_pipeline.demo import write_demo_landing
from cost_pipeline.ingest.lib.arrivals import record_arrivals
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import SOURCES
from tests.helpers import query

SOURCE = SOURCES["batch_registry"]  # registry/batches*.csv


@pytest.fixture
def instance():
    with dg.instance_for_test() as temporary:
        yield temporary


def tick(instance: dg.DagsterInstance, landing: Path, cursor: str | None) -> dg.SensorResult:
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"landing": LandingZone(path=str(landing))}
    )
    return files_sensor(SOURCE)(context)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_sensor_runs_on_new_bytes_only_never_on_a_new_name(tmp_path, instance):
    landing = tmp_path / "landing"
    first = write(landing / "registry" / "batches_a.csv", "batch_id\nb1\n")
    write(landing / "registry" / "rounds.csv", "not this source's\n")
    write(landing / "scheduler" / "batches_z.csv", "another folder\n")

    started = tick(instance, landing, None)
    assert not started.run_requests  # starting a sensor is no delivery
    assert Seen.load(started.cursor).hashes and Seen.load(started.cursor).deliveries == 0

    unchanged = tick(instance, landing, started.cursor)
    assert not unchanged.run_requests
    assert unchanged.cursor == started.cursor

    first.rename(landing / "registry" / "batches_renamed.csv")
    renamed = tick(instance, landing, unchanged.cursor)
    assert not renamed.run_requests
    assert Seen.load(renamed.cursor) == Seen.load(started.cursor)

    write(landing / "registry" / "batches_renamed.csv", "batch_id\nb1\nb2\n")
    changed = tick(instance, landing, renamed.cursor)
    assert len(changed.run_requests) == 1
    request = changed.run_requests[0]
    assert request.run_key.startswith("batch_registry:1:")
    assert request.tags["cost_pipeline/source"] == "batch_registry"
    again = tick(instance, landing, renamed.cursor)  # the same tick evaluated twice asks for the same run
    assert [r.run_key for r in again.run_requests] == [request.run_key]

    after = tick(instance, landing, changed.cursor)
    assert not after.run_requests

    first.write_text("batch_id\nb1\n", encoding="utf-8")  # the old bytes back beside the changed file
    back = tick(instance, landing, after.cursor)
    assert len(back.run_requests) == 1 and back.run_requests[0].run_key != request.run_key


def test_the_cursor_round_trips_and_holds_hashes_not_names(tmp_path):
    seen = Seen(frozenset({"b" * 64, "a" * 64}), deliveries=3)
    dumped = seen.dump()
    assert Seen.load(dumped) == seen
    assert dumped == Seen.load(dumped).dump()
    assert "batches" not in dumped and dumped.index("a" * 64) < dumped.index("b" * 64)
    assert Seen.load(None) is None and Seen.load("") is None


def test_every_source_has_a_stopped_sensor_that_runs_its_asset_and_what_is_downstream():
    assert {s.name for s in landing_sensors} == {f"{name}_files" for name in SOURCES}
    assert all(s.default_status == dg.DefaultSensorStatus.STOPPED for s in landing_sensors)
    graph = defs.resolve_asset_graph()
    sensor = defs.resolve_sensor_def("scheduler_jobs_files")
    selected = sensor.job.selection.resolve(graph)
    assert dg.AssetKey(["raw", "scheduler_jobs"]) in selected
    assert dg.AssetKey(["published", "marts"]) in selected
    assert dg.AssetKey(["raw", "batch_registry"]) not in selected  # other sources are not re-read


def test_every_job_builds_and_a_sensors_job_checks_held_rows_and_freshness_of_its_own_source_only():
    """Each sensor's job selects one source's raw asset and what is downstream: of the multi-checks on held rows and
    on freshness it runs that source's checks, not the others' (they can be subset; without it no job would build)."""
    assert {job.name for job in defs.get_repository_def().get_all_jobs()} >= {s.job.name for s in landing_sensors}
    job = defs.resolve_job_def(defs.resolve_sensor_def("serving_requests_files").job.name)
    for check in ("no_held_rows", CHECK):
        selected = {key for key in job.asset_layer.asset_graph.asset_check_keys if key.name == check}
        assert selected == {dg.AssetCheckKey(dg.AssetKey(["raw", "serving_requests"]), check)}


def test_the_nightly_schedule_runs_every_unpartitioned_asset_at_two_and_the_months_follow_its_success():
    """The schedule (running by default) asks for one run of the nightly job at 02:00 UTC: every asset but the
    monthly partitions, which ``monthly_after_nightly`` requests when that job succeeds (test_monthly_partitions)."""
    schedule = defs.resolve_schedule_def("nightly_cost_refresh")
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("0 2 * * *", "UTC")
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    tick = datetime(2026, 12, 2, 2, 0, tzinfo=UTC)
    with dg.build_schedule_context(scheduled_execution_time=tick) as context:
        (request,) = schedule.evaluate_tick(context).run_requests
    assert request.partition_key is None and schedule.job_name == "nightly_cost_refresh_job"
    graph = defs.resolve_asset_graph()
    selected = schedule.job.selection.resolve(graph)
    monthly = {key for key in graph.get_all_asset_keys() if key.path[0] == "monthly"}
    assert monthly and selected == graph.materializable_asset_keys - monthly
    assert {dg.AssetKey(["raw", "device_samples"]), dg.AssetKey(["published", "marts"])} <= selected


def freshness(landing: Path, warehouse: Path) -> dg.AssetCheckEvaluation:
    """Run only the batch registry's freshness check (its ingest asset loads nothing)."""
    check = dg.AssetCheckKey(dg.AssetKey(["raw", SOURCE.name]), CHECK)
    job = dg.Definitions(
        assets=[ASSETS_BY_TABLE[SOURCE.name]],
        jobs=[dg.define_asset_job("freshness", selection=dg.AssetSelection.checks(check))],
        resources={"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))},
    ).resolve_job_def("freshness")
    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral())
    (evaluation,) = result.get_asset_check_evaluations()
    assert evaluation.check_name == CHECK and evaluation.severity == dg.AssetCheckSeverity.WARN
    return evaluation


def test_freshness_warns_on_an_old_delivery_and_passes_on_a_new_one(tmp_path):
    landing = write_demo_landing(tmp_path / "landing")
    warehouse = tmp_path / "w.duckdb"
    resources = {"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))}

    never = freshness(landing, warehouse)
    assert not never.passed and never.description == "batch_registry never delivered a file"

    dg.materialize([ASSETS_BY_TABLE["batch_registry"]], resources=resources, instance=dg.DagsterInstance.ephemeral())
    ((files, first_seen),) = query(
        warehouse, "select count(*), max(first_seen_at) from ops.file_arrivals where source = 'batch_registry'"
    )
    assert files == len(SOURCE.files(landing)) and files > 0
    assert freshness(landing, warehouse).passed

    allowed = load_contract().max_age_hours("batch_registry")
    old = first_seen - timedelta(hours=allowed + 1)

    con = duckdb.connect(str(warehouse))
    con.execute("update ops.file_arrivals set first_seen_at = ?", [old])
    con.close()
    stale = freshness(landing, warehouse)
    assert not stale.passed and stale.metadata["max_age_hours"].value == allowed
    assert stale.metadata["age_hours"].value > allowed

    # The same bytes under another name are no delivery: the check still warns.
    (registry,) = SOURCE.files(landing)
    registry.rename(registry.with_name("batches_again.csv"))
    dg.materialize([ASSETS_BY_TABLE["batch_registry"]], resources=resources, instance=dg.DagsterInstance.ephemeral())
    assert not freshness(landing, warehouse).passed

    # New bytes are: it passes again.
    registry.with_name("batches_again.csv").write_text(registry.with_name("batches_again.csv").read_text() + "\n")
    dg.materialize([ASSETS_BY_TABLE["batch_registry"]], resources=resources, instance=dg.DagsterInstance.ephemeral())
    fresh = freshness(landing, warehouse)
    assert fresh.passed and datetime.fromisoformat(fresh.metadata["newest_delivery"].value) > old


def test_the_freshness_check_is_evaluated_in_the_load_s_step_and_alone_loads_nothing(tmp_path):
    """The ingest asset evaluates its freshness check after its load, in the same step; selected alone, the check
    reads the warehouse and loads nothing; a check that describes a load is refused without it."""
    landing = write_demo_landing(tmp_path / "landing")
    warehouse = tmp_path / "w.duckdb"
    resources = {"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))}
    asset = ASSETS_BY_TABLE[SOURCE.name]
    raw = dg.AssetKey(["raw", SOURCE.name])

    alone = freshness(landing, warehouse)
    assert not alone.passed
    assert not query(warehouse, "select 1 from information_schema.tables where table_name = 'batch_registry'")

    loaded = dg.materialize([asset], resources=resources, instance=dg.DagsterInstance.ephemeral())
    steps = {event.step_key for event in loaded.all_events if event.is_step_start}
    evaluations = {e.check_name: e.passed for e in loaded.get_asset_check_evaluations()}
    assert steps == {f"raw__{SOURCE.name}"} and evaluations[CHECK] and evaluations["rows_conserved"]
    assert query(warehouse, "select 1 from information_schema.tables where table_name = 'batch_registry'")

    refused = dg.materialize(
        [asset],
        selection=dg.AssetSelection.checks(dg.AssetCheckKey(raw, "rows_conserved")),
        resources=resources,
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    (failure,) = refused.get_step_failure_events()
    assert "rows_conserved of raw/batch_registry describe(s) its load" in failure.event_specific_data.error.message


def test_a_freshness_check_with_alternatives_runs_after_their_loads(tmp_path):
    """dcgm-exporter scrapes never delivered, DCGM CSVs deliver for the first time tonight: the scrapes' check, a step
    of its own after every alternative's load, sees them and passes on the first night."""
    landing = write_demo_landing(tmp_path / "landing")
    assert not SOURCES["device_samples_dcgm"].files(landing) and SOURCES["device_samples"].files(landing)
    resources = {"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(tmp_path / "w.duckdb"))}
    scrapes = dg.AssetKey(["raw", "device_samples_dcgm"])
    (check,) = [c for c in freshness_checks if scrapes in {key.asset_key for key in c.check_keys}]
    assert dg.AssetCheckKey(scrapes, CHECK) not in ASSETS_BY_TABLE["device_samples_dcgm"].check_keys
    (spec,) = check.check_specs
    assert {dep.asset_key for dep in spec.additional_deps} == {
        dg.AssetKey(["raw", "device_samples"]),
        dg.AssetKey(["raw", "device_samples_prometheus"]),
    }
    night = dg.materialize(
        [ASSETS_BY_TABLE[name] for name in ("device_samples_dcgm", "device_samples_prometheus", "device_samples")]
        + [check],
        resources=resources,
        instance=dg.DagsterInstance.ephemeral(),
    )
    evaluations = {(e.asset_key.path[-1], e.check_name): e for e in night.get_asset_check_evaluations()}
    delivered = evaluations[("device_samples_dcgm", CHECK)]
    assert delivered.passed and "none is expected while device_samples" in delivered.description
    assert ("batch_registry", CHECK) not in evaluations


def test_a_source_that_never_delivered_passes_only_while_an_alternative_delivers(tmp_path):
    """dcgm-exporter scrapes are not expected where DCGM CSVs come (contract operations.freshness.alternatives)."""
    warehouse = tmp_path / "w.duckdb"
    con = connect(warehouse)
    try:
        record_arrivals(con, "device_samples")  # an empty ledger: nothing arrived yet
        scrapes = load_contract().delivery_alternatives("device_samples_dcgm")
        assert set(scrapes) == {"device_samples", "device_samples_prometheus"}
        alone = delivery_result(con, "device_samples_dcgm", 26, alternatives=scrapes)
        assert not alone.passed and "nor did its alternatives" in alone.description
        con.execute("insert into ops.file_arrivals values ('device_samples', 'ab12', now()::timestamp)")
        instead = delivery_result(con, "device_samples_dcgm", 26, alternatives=scrapes)
        assert instead.passed and "while device_samples delivers" in instead.description
        assert not delivery_result(con, "timesheets", 168, alternatives=()).passed
    finally:
        con.close()


def test_a_source_the_contract_does_not_expect_passes_whatever_its_age(tmp_path):
    """A serving-less organisation marks its serving feeds expected: false; it keeps their contract age for the day
    they come, and a source without an entry keeps the default."""
    document = copy.deepcopy(load_contract().document)
    document["operations"]["freshness"]["sources"]["serving_requests"] = {"expected": False}
    contract = Contract(version="v1", document=document)
    assert not contract.delivery_expected("serving_requests") and contract.delivery_expected("timesheets")
    assert contract.max_age_hours("serving_requests") == contract.max_age_hours("device_samples") == 26
    document["operations"]["freshness"]["sources"]["serving_requests"] = {"expected": "no"}
    with pytest.raises(ValueError, match="expected 'no' is not true or false"):
        Contract(version="v1", document=document).delivery_expected("serving_requests")
    con = connect(tmp_path / "w.duckdb")
    try:
        record_arrivals(con, "serving_requests")  # an empty ledger: nothing arrived yet
        never = delivery_result(con, "serving_requests", 26, expected=False)
        assert never.passed and "not expected" in never.description and "never delivered" in never.description
        con.execute("insert into ops.file_arrivals values ('serving_requests', 'cd34', '2026-01-01 00:00:00')")
        old = delivery_result(con, "serving_requests", 26, expected=False)
        assert old.passed and "last delivered 2026-01-01 00:00 UTC" in old.description
        assert not delivery_result(con, "serving_requests", 26).passed  # expected: 26 h is long gone
    finally:
        con.close()


def test_every_asset_has_owners_and_a_description():
    graph = defs.resolve_asset_graph()
    keys = graph.get_all_asset_keys()
    assert len(keys) > 100
    unowned = sorted(k.to_user_string() for k in keys if not graph.get(k).owners)
    undescribed = sorted(k.to_user_string() for k in keys if not (graph.get(k).description or "").strip())
    assert (unowned, undescribed) == ([], [])
    contract = load_contract()
    assert graph.get(dg.AssetKey(["raw", "timesheets"])).owners == contract.owners("timesheets")
    assert graph.get(dg.AssetKey(["marts", "fct_batch_costs"])).owners == contract.owners("marts", kind="layers")


def test_every_source_has_a_warning_freshness_check_with_its_contract_age():
    contract = load_contract()
    graph = defs.resolve_asset_graph()
    for name in SOURCES:
        key = dg.AssetCheckKey(dg.AssetKey(["raw", name]), CHECK)
        assert key in graph.asset_check_keys
        due = contract.delivery_due(name)
        expected = f"{contract.max_age_hours(name):g} h" if due is None else f"due {due}"
        assert expected in graph.get_check_spec(key).description
    assert str(contract.delivery_due("service_invoices")) == "monthly, day 6 06:00 UTC"


@pytest.mark.parametrize(
    ("spec", "now", "latest", "before"),
    [
        ({"at": "01:30"}, "2026-12-02 01:29", "2026-12-01 01:30", "2026-11-30 01:30"),
        ({"at": "01:30"}, "2026-12-02 01:30", "2026-12-02 01:30", "2026-12-01 01:30"),
        ({"weekday": "Monday", "at": "09:00"}, "2026-12-02 12:00", "2026-11-30 09:00", "2026-11-23 09:00"),
        ({"weekday": "wednesday", "at": "09:00"}, "2026-12-02 08:59", "2026-11-25 09:00", "2026-11-18 09:00"),
        ({"day": 6, "at": "00:00"}, "2026-12-02 00:00", "2026-11-06 00:00", "2026-10-06 00:00"),
        ({"day": 6, "at": "00:00"}, "2026-12-06 00:00", "2026-12-06 00:00", "2026-11-06 00:00"),
        ({"day": 28, "at": "23:59"}, "2027-01-05 00:00", "2026-12-28 23:59", "2026-11-28 23:59"),
        ({"day": 1, "at": "00:00"}, "2027-01-01 00:00", "2027-01-01 00:00", "2026-12-01 00:00"),
    ],
)
def test_a_due_time_recurs_daily_weekly_or_monthly(spec, now, latest, before):
    due = parse_due(spec, "test")
    found = due.latest(datetime.fromisoformat(now))
    assert (found, due.before(found)) == (datetime.fromisoformat(latest), datetime.fromisoformat(before))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"at": 90}, "is not a time HH:MM"),  # YAML reads an unquoted 01:30 as 90 (minutes, base 60)
        ({"at": "24:00"}, "is not a time HH:MM"),
        ({"day": 29, "at": "00:00"}, "from 1 to 28"),
        ({"day": True, "at": "00:00"}, "from 1 to 28"),
        ({"weekday": "mon", "at": "00:00"}, "is not one of monday"),
        ({"weekday": "monday", "day": 1, "at": "00:00"}, "both a weekday and a day"),
        ({"day": 1}, "is not {at: HH:MM}"),
        ("daily", "is not {at: HH:MM}"),
    ],
)
def test_a_due_time_the_contract_cannot_mean_is_refused(spec, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_due(spec, "contract v1: operations.freshness of x")


def test_a_source_with_a_due_time_warns_once_a_due_time_passed_with_nothing_since_the_one_before(tmp_path):
    """Invoices due on the 6th: the October export (delivered 3 November) is enough until 6 December; from then
    the November export is due. ``max_age_hours`` is not used."""
    due = parse_due({"day": 6, "at": "00:00"}, "test")
    con = connect(tmp_path / "w.duckdb")
    try:
        record_arrivals(con, "service_invoices")  # an empty ledger: nothing arrived yet
        con.execute("insert into ops.file_arrivals values ('service_invoices', 'ef56', '2026-11-03 10:00:00')")

        def result(now: str) -> dg.AssetCheckResult:
            return delivery_result(con, "service_invoices", 1, now=datetime.fromisoformat(now), due=due)

        waiting = result("2026-12-05 23:59")
        assert waiting.passed and "the delivery due 2026-11-06 00:00 UTC came" in waiting.description
        assert waiting.metadata["latest_due"].value == "2026-11-06 00:00:00" and "max_age_hours" not in waiting.metadata
        late = result("2026-12-06 00:00")
        assert not late.passed
        assert late.description == (
            "service_invoices last delivered 2026-11-03 10:00 UTC, 782.0 h ago; due monthly, day 6 00:00 UTC: the "
            "delivery due 2026-12-06 00:00 UTC has not come (nothing since 2026-11-06 00:00 UTC)"
        )
        con.execute("insert into ops.file_arrivals values ('service_invoices', 'ab78', '2026-12-08 09:00:00')")
        assert result("2026-12-08 09:01").passed  # late, but in
        # A delivery counts for the period it arrives in (a file does not say which it covers): the late one
        # stands for December's export too, until 6 February.
        assert result("2027-02-05 23:59").passed and not result("2027-02-06 00:00").passed
    finally:
        con.close()
    document = copy.deepcopy(load_contract().document)
    document["operations"]["freshness"]["sources"]["service_invoices"] = {"max_age_hours": 840, "due": {"at": "01:00"}}
    with pytest.raises(ValueError, match="give max_age_hours or due, not both"):
        Contract(version="v1", document=document).delivery_due("service_invoices")


def test_a_rewrite_of_the_same_size_within_the_clocks_tick_is_still_new_bytes(tmp_path, instance):
    landing = tmp_path / "landing"
    path = write(landing / "registry" / "batches_a.csv", "batch_id\nb1\n")
    started = tick(instance, landing, None)
    written = path.stat().st_mtime_ns
    path.write_text("batch_id\nb2\n", encoding="utf-8")  # same size, same inode
    os.utime(path, ns=(written, written))  # and, as a coarse clock would leave it, the same modification time
    changed = tick(instance, landing, started.cursor)
    assert len(changed.run_requests) == 1


def test_a_freshness_check_that_cannot_read_the_deliveries_warns_instead_of_failing_its_step(tmp_path):
    """In the load's step an exception would cost the source its materialisation: it is the check's warning."""
    con = connect(tmp_path / "w.duckdb")
    con.close()
    result = Freshness.of("batch_registry").result(con)
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    assert result.description.startswith("the deliveries of batch_registry could not be read: ")
