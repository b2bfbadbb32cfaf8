"""A dbt test that fails on landing rows costs only those rows, and every failing row is named by file and line
(issue 10).

A value that gets past the contract and fails a dbt test is a contract defect. Until it is fixed, the night says
where the value came from: the failing rows are stored in `audit`, whole, with their landing file and line
(cost_pipeline/dbt_failures.py, dbt_project/macros/failing_source_rows.sql). When they are all landing rows of a
staging model they are quarantined (rule `dbt:<test>`) and the night builds again without them: every mart is
published, the summary names them and the CLI exits 12. Otherwise the night fails naming the test and its rows.

The nights below are the session's demo night run again on a copy whose raw requests were changed behind the
contract's back, as a defect of the contract would let them through: the requests file is unchanged, so the night
keeps its raw rows (the incremental load) and dbt sees the bad values. The held night is whole (its test reads every
holdable source's check); the nights after it, or after a change to the requests alone, run only the requests and
what they feed (``run --select REQUESTS_DOWNSTREAM``): nothing else reads the requests, and the rest stays as the
night before built it.
"""

from __future__ import annotations

import io
import json
import shutil
from dataclasses import replace
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from dagster._utils.error import SerializableErrorInfo

from cost_pipeline.cli import HELD_EXIT, run_pipeline
from cost_pipeline.dagster_home import warehouse_instance
from cost_pipeline.dbt_failures import FailedTest, HoldRefused, _count, failed_tests, failure_report, hold_rows
from cost_pipeline.dbt_setup import manifest_path
from cost_pipeline.ingest.lib.warehouse import release_held_rows
from cost_pipeline.progress import root_cause
from cost_pipeline.source_summary import SummaryFindings, print_source_summary
from tests.helpers import Night, cli_night, query, tamper_raw

pytestmark = pytest.mark.xdist_group("dbt_failures")

REQUESTS_FILE = "requests/requests_2026-11.jsonl"
STATUS_TEST = "in_contract_enumeration_stg_serving__requests_status__request_status"
NOT_NULL_TEST = "not_null_columns_stg_serving__requests_request_id__requested_at__model__tenant__business_line__status"


def _manifest() -> dict:
    return json.loads(manifest_path().read_text(encoding="utf-8"))


def _test_node(manifest: dict, name: str) -> dict:
    (node,) = (n for n in manifest["nodes"].values() if n["resource_type"] == "test" and n["name"] == name)
    return node


def test_the_failed_tests_are_the_error_tests_that_failed():
    manifest = _manifest()
    status, not_null = _test_node(manifest, STATUS_TEST), _test_node(manifest, NOT_NULL_TEST)
    warned = next(
        n for n in manifest["nodes"].values() if n["resource_type"] == "test" and n["config"]["severity"] == "warn"
    )
    results = {
        "results": [
            {"unique_id": status["unique_id"], "status": "fail"},
            {"unique_id": not_null["unique_id"], "status": "pass"},
            {"unique_id": warned["unique_id"], "status": "warn"},
            {
                "unique_id": "model.cost_pipeline.stg_serving__requests",
                "status": "success",
                "compiled_code": "select 1",
            },
            {"unique_id": "model.cost_pipeline.int_requests_costed", "status": "error"},
        ]
    }
    (failed,) = failed_tests(results, manifest)
    assert failed == FailedTest(
        name=STATUS_TEST,
        path="models/staging/serving/_serving__models.yml",
        rule="`status` is a value of the contract's `request_status` enumeration, in the row's contract version",
        model="staging.stg_serving__requests",
        stored=f"audit.{status['alias']}",
        raw_tables=("serving_requests",),
        record_key=("lower(request_id)", "requested_at"),  # the model's meta: every delivery of a failing request
        model_sql="select 1",  # incremental: the hold counts its rows from raw by the build's SQL
        materialized="incremental",
    )
    assert not failed.holdable  # until its stored rows are read back


def test_a_table_is_counted_from_raw_by_its_sql_never_by_its_stored_rows(tmp_path):
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        con.execute("create schema raw; create schema staging")
        con.execute("create table raw.r as select range as i from range(5)")
        con.execute("create table staging.s as select * from raw.r")
        sql = "select * from raw.r -- a comment"
        test = FailedTest("t", "m.yml", "rule", "staging.s", "audit.t", model_sql=sql, materialized="table")
        con.execute("delete from raw.r where i = 4")
        assert _count(con, test) == 4  # raw as it is now; the table still has 5
        assert _count(con, replace(test, model_sql="select * from raw.r;\n")) == 4
        with pytest.raises(HoldRefused, match="staging.s is a table that this run did not build"):
            _count(con, replace(test, model_sql=None))
        # An incremental table (stg_serving__requests) by its build's SQL too: the periods that build made again.
        assert _count(con, replace(test, materialized="incremental")) == 4
        with pytest.raises(HoldRefused, match="staging.s is ephemeral"):
            _count(con, replace(test, materialized="ephemeral"))
        con.execute("create view staging.v as select * from raw.r")
        assert _count(con, replace(test, model="staging.v", materialized="view")) == 4
    finally:
        con.close()


def test_the_root_cause_is_the_first_failed_test_with_its_files_and_lines():
    places = (("a/x.csv", 4), ("a/x.csv", 9))
    first = FailedTest("t_one", "models/a.yml", "No two rows share a `k`", "staging.a", "audit.t_one", 3, places, 1, 0)
    grouped = FailedTest("t_two", "models/b.yml", "One row per `m`", "marts.b", "audit.t_two", 1)
    unplaced = FailedTest("t_three", "models/c.yml", "`c` is never null", "staging.c", "audit.t_three", 1, (), 0, 1)
    unread = FailedTest("t_four", "models/d.yml", "`d` is never null", None, "audit.t_four")
    report = failure_report([first, grouped, unplaced, unread], "dbt's own error")
    error = SerializableErrorInfo(
        'Error occurred while executing op "cost_models":',
        [],
        "Error",
        cause=SerializableErrorInfo(f"cost_pipeline.defs.dbt.DbtTestsFailed: {report}", [], "DbtTestsFailed"),
    )
    assert root_cause("cost_models", error) == (
        "dbt test t_one (models/a.yml): No two rows share a `k`: 3 rows of staging.a break it, from a/x.csv line 4, "
        "a/x.csv line 9 and 1 more; stored in audit.t_one; 3 more tests failed"
    )
    assert (
        "  One row per `m`: the test returned 1 row (failing values or groups, without their landing files); "
        "stored in audit.t_two"
    ) in report
    assert "  `c` is never null: 1 row of staging.c breaks it, none with a landing file and line; stored in " in report
    assert "  `d` is never null: its failing rows were not stored (see dbt's log)" in report
    assert report.endswith("\n\ndbt's own error")
    assert first.holdable is False  # not a staging model of a raw table
    assert replace(first, raw_tables=("a",)).holdable and not replace(unplaced, raw_tables=("c",)).holdable


def _night(
    root: Path, landing_from: Path, warehouse_from: Path, tamper: list[str], covering: tuple[str, ...] | None = None
) -> Night:
    """``cost-pipeline run`` on copies of a landing folder and of a warehouse, after ``tamper`` statements on the
    copy's raw tables: the whole nightly job, or with ``covering`` (the assets the test reads, which must be among
    them) only the requests and what they feed (``--select REQUESTS_DOWNSTREAM``)."""
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    shutil.copytree(landing_from, landing)
    shutil.copy2(warehouse_from, warehouse)
    if covering is None:
        return cli_night(landing, warehouse, tamper)
    return cli_night(landing, warehouse, tamper, select=REQUESTS_DOWNSTREAM, covering=covering)


def _requests_night(root: Path, landing_from: Path, warehouse_from: Path, tamper: list[str]) -> Path:
    """The nightly job as far as the requests go (REQUEST_ASSETS: nothing else reads the requests file) on copies of a
    landing folder and of a warehouse, after ``tamper`` statements; it ends as a night that exits 0 ends: the run
    succeeded and the summary the CLI's exit code reports finds no source held, stale or wholly quarantined. Returns
    the warehouse. Only for a night whose requests end as the demo's (the test asserts they do): the rest of that
    night is the demo's night, which the session ran whole."""
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    shutil.copytree(landing_from, landing)
    shutil.copy2(warehouse_from, warehouse)
    tamper_raw(warehouse, tamper)
    assert run_pipeline(landing, warehouse, asset_keys=REQUEST_ASSETS)
    assert print_source_summary(warehouse, io.StringIO()) == SummaryFindings()
    return warehouse


BAD_LINES = [
    "update raw.serving_requests set status = 'bogus' where source_line in (5, 7)",
    "update raw.serving_requests set model = null where source_line = 9",
]
# A file that delivers line 5's request again on a later night: its name sorts before REQUESTS_FILE, but it arrived
# later (ops.file_arrivals), so it is the newest delivery, the copy newest_delivery keeps.
RESENT_FILE = "requests/requests_2026-10-resent.jsonl"
REQUESTS_STAGING = ("staging", "stg_serving__requests")
# The requests' raw asset (with its no_held_rows check), their staging model and the costed requests, each with its
# tests.
REQUEST_ASSETS = [
    ("raw", "serving_requests"),
    ("intermediate", "int_requests_inputs"),
    REQUESTS_STAGING,
    ("intermediate", "int_requests_costed"),
]
# A night after a change to the requests alone: their raw asset and every asset of the nightly job downstream of it.
REQUESTS_DOWNSTREAM = "key:raw/serving_requests+"


@pytest.fixture(scope="module")
def held_night(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Night:
    """The demo night again, its raw requests changed behind the contract: lines 5 and 7 have a status that is no
    contract code, line 9 has no model."""
    assert demo_run.succeeded
    return _night(tmp_path_factory.mktemp("held"), demo_run.landing, demo_run.warehouse, BAD_LINES)


def _requests_ledger(warehouse: Path, source_file: str = REQUESTS_FILE) -> tuple:
    (row,) = query(
        warehouse,
        "select rows_in, rows_staged, rows_quarantined from raw.ingested_files where source_file = ?",
        [source_file],
    )
    return row


def test_rows_that_fail_a_staging_test_are_quarantined_and_the_night_builds_without_them(demo_run, held_night):
    assert held_night.code == HELD_EXIT, held_night.err
    assert held_night.err.strip().splitlines()[-1] == (
        "cost-pipeline: rows of serving_requests passed the contract and failed dbt tests: they are quarantined and "
        "tonight's figures leave them out (see the held: lines; the contract needs a rule)"
    )
    assert (
        f"  held: 2 row(s) of serving_requests passed the contract and failed dbt test {STATUS_TEST} (first: "
        f"{REQUESTS_FILE} line 5); quarantined, left out of the marts built tonight" in held_night.out
    )
    assert f"failed dbt test {NOT_NULL_TEST} (first: {REQUESTS_FILE} line 9)" in held_night.out
    # Rows in = staged + quarantined, still: three rows moved from staged to quarantined in the ledger.
    rows_in, staged, quarantined = _requests_ledger(demo_run.warehouse)
    assert _requests_ledger(held_night.warehouse) == (rows_in, staged - 3, quarantined + 3)
    assert query(
        held_night.warehouse,
        "select line, rule, raw_text like '%\"bogus\"%' from raw.quarantine where starts_with(rule, 'dbt:') "
        "order by line",
    ) == [(5, f"dbt:{STATUS_TEST}", True), (7, f"dbt:{STATUS_TEST}", True), (9, f"dbt:{NOT_NULL_TEST}", False)]
    assert query(held_night.warehouse, "select count(*) from raw.serving_requests where source_line in (5, 7, 9)") == [
        (0,)
    ]
    # Every mart is built and published, the requests' without those three.
    costed = "select count(*) from intermediate.int_requests_costed"
    assert query(held_night.warehouse, costed)[0][0] == query(demo_run.warehouse, costed)[0][0] - 3
    published = held_night.warehouse.with_name("warehouse.finance.duckdb")
    assert query(published, "select count(*) from marts.fct_request_group_costs")[0][0] > 0
    # In Dagster: the requests' raw asset's no_held_rows check warns, naming the rows; the other sources' pass.
    assert _held_checks(held_night.warehouse) == {
        "serving_requests": (False, 3, {STATUS_TEST: 2, NOT_NULL_TEST: 1}),
        "timesheets": (True, 0, {}),
        "device_samples": (True, 0, {}),
        "device_samples_dcgm": (True, 0, {}),
        "device_samples_prometheus": (True, 0, {}),
        "training_steps": (True, 0, {}),
        "batch_rounds": (True, 0, {}),
        "service_invoices": (True, 0, {}),
    }


def _held_checks(warehouse: Path) -> dict[str, tuple[bool, int, dict[str, int]]]:
    """The last run's no_held_rows results, by source: (passed, rows held, rows held by test); all of WARN severity."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        with warehouse_instance(warehouse) as instance:
            (run,) = instance.get_runs(limit=1)
            evaluations = [
                event.dagster_event.event_specific_data
                for event in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
            ]
    held = [e for e in evaluations if e.check_name == "no_held_rows"]
    assert {e.severity for e in held} == {dg.AssetCheckSeverity.WARN}
    return {
        e.asset_key.path[-1]: (e.passed, e.metadata["rows_held"].value, e.metadata["rows_held_by_test"].value)
        for e in held
    }


def test_a_file_with_held_rows_is_read_again_and_its_sound_rows_count_again(demo_run, held_night, tmp_path):
    """The held rows' file is not reused: read again, its lines (sound in the file) load, pass and count, as a fix of
    the contract or of dbt would release rows that no longer fail. The night after the held night, on copies of its
    landing folder and warehouse, nothing changed: it ends as a night that exits 0."""
    warehouse = _requests_night(tmp_path, held_night.landing, held_night.warehouse, [])
    assert _requests_ledger(warehouse) == _requests_ledger(demo_run.warehouse)
    assert query(warehouse, "select count(*) from raw.quarantine where starts_with(rule, 'dbt:')") == [(0,)]
    costed = "select count(*) from intermediate.int_requests_costed"
    assert query(warehouse, costed) == query(demo_run.warehouse, costed)


def _gone(demo_run, held_night: Night, root: Path, mend: dict[int, dict[str, str]]) -> tuple[Path, list[str]]:
    """For the night after the held night: the held night's landing folder without the requests file, and the
    statements that mend its held lines in the quarantine's copy of each row (line -> columns put back to the demo's
    values), as a fix of the contract would make them pass."""
    landing = root / "from"
    shutil.copytree(held_night.landing, landing)
    (landing / REQUESTS_FILE).unlink()
    mended = []
    for line, columns in mend.items():
        for column in columns:
            ((value,),) = query(
                demo_run.warehouse,
                f"select {column} from raw.serving_requests where source_file = ? and source_line = ?",
                [REQUESTS_FILE, line],
            )
            # The kept text as the pipeline writes it (to_json: no spaces), the column's value put back.
            mended.append(
                f'update raw.quarantine set raw_text = regexp_replace(raw_text, \'"{column}":("[^"]*"|null)\', '
                f"'\"{column}\":{json.dumps(value)}') where source_file = '{REQUESTS_FILE}' and line = {line}"
            )
    return landing, mended


def test_held_rows_of_a_gone_file_are_tested_again_and_released_when_they_pass(demo_run, held_night, tmp_path):
    """The requests file is gone from the landing folder: raw keeps its rows, and its held rows go back into raw from
    the quarantine's copy and are tested again. Lines 5 and 7, mended, pass and count; line 9 still fails and is
    held again."""
    landing, mended = _gone(demo_run, held_night, tmp_path, {5: ["status"], 7: ["status"]})
    night = _night(
        tmp_path / "night",
        landing,
        held_night.warehouse,
        mended,
        covering=("raw/serving_requests", "staging/stg_serving__requests", "intermediate/int_requests_costed"),
    )
    assert night.code == HELD_EXIT, night.err
    assert f"failed dbt test {STATUS_TEST}" not in night.out
    assert f"  held: 1 row(s) of serving_requests passed the contract and failed dbt test {NOT_NULL_TEST}" in night.out
    rows_in, staged, quarantined = _requests_ledger(demo_run.warehouse)
    assert _requests_ledger(night.warehouse) == (rows_in, staged - 1, quarantined + 1)
    assert query(night.warehouse, "select line, rule from raw.quarantine where starts_with(rule, 'dbt:')") == [
        (9, f"dbt:{NOT_NULL_TEST}")
    ]
    costed = "select count(*) from intermediate.int_requests_costed"
    assert query(night.warehouse, costed)[0][0] == query(demo_run.warehouse, costed)[0][0] - 1
    # Every row of the file, the released ones too, is in raw as the demo loaded it, typed as before.
    back = f"select * from raw.serving_requests where source_file = '{REQUESTS_FILE}' and source_line <> 9"
    assert sorted(query(night.warehouse, back)) == sorted(query(demo_run.warehouse, back))
    assert _held_checks(night.warehouse)["serving_requests"] == (False, 1, {NOT_NULL_TEST: 1})


def test_held_rows_of_a_gone_file_that_all_pass_again_end_the_warning(demo_run, held_night, tmp_path):
    """Mended through and through (line 9's model back too), the gone file's rows all count again: the night ends as
    one that exits 0."""
    landing, mended = _gone(demo_run, held_night, tmp_path, {5: ["status"], 7: ["status"], 9: ["model"]})
    warehouse = _requests_night(tmp_path / "night", landing, held_night.warehouse, mended)
    assert _requests_ledger(warehouse) == _requests_ledger(demo_run.warehouse)
    every = f"select * from raw.serving_requests where source_file = '{REQUESTS_FILE}'"
    assert sorted(query(warehouse, every)) == sorted(query(demo_run.warehouse, every))
    assert _held_checks(warehouse)["serving_requests"] == (True, 0, {})


def test_the_stored_failing_rows_are_the_landing_rows(held_night):
    """Each held row names its landing file and line, and that line of that file is the same request; each test's
    audit table holds the model's failing rows, with their file and line."""
    held = query(
        held_night.warehouse,
        "select source_file, line, raw_text from raw.quarantine where starts_with(rule, 'dbt:') order by all",
    )
    assert len(held) == 3
    for source_file, line, raw_text in held:
        landed = (held_night.landing / source_file).read_text(encoding="utf-8").splitlines()[line - 1]
        assert json.loads(landed)["request_id"] == json.loads(raw_text)["request_id"], (source_file, line)
    manifest = _manifest()
    status = _test_node(manifest, STATUS_TEST)["alias"]
    not_null = _test_node(manifest, NOT_NULL_TEST)["alias"]
    assert query(
        held_night.warehouse, f'select status, source_file, source_line from audit."{status}" order by source_line'
    ) == [("bogus", REQUESTS_FILE, 5), ("bogus", REQUESTS_FILE, 7)]
    assert query(held_night.warehouse, f'select null_columns, source_file, source_line from audit."{not_null}"') == [
        ("model ", REQUESTS_FILE, 9)
    ]


def test_every_delivery_of_a_failing_record_is_held_so_no_older_one_takes_its_place(demo_run, tmp_path):
    """The night after the demo, line 5's request is delivered again in RESENT_FILE: that copy arrived later, so
    staging keeps it, whatever the file's name (which sorts before the demo's). The next night that newest copy fails
    a test. Holding it alone would let the demo's older copy, sound, count in its place (staging keeps one delivery
    per request, its meta's record_key: the id case-folded and the start): both are held, and the request counts
    nowhere. The copy spells the id in lower case, as a re-export may: it is the same request, held with it."""
    line_5 = (demo_run.landing / REQUESTS_FILE).read_text(encoding="utf-8").splitlines()[4]
    request = json.loads(line_5)
    request_id = request["request_id"]
    resent_line = json.dumps({**request, "request_id": request_id.lower()})
    assert resent_line != line_5
    kept = "select source_file, source_line from staging.stg_serving__requests where lower(request_id) = lower(?)"
    # The night after the demo as far as the requests' staging goes: their raw asset loads the copy and records its
    # arrival, and the staging model (a table, with its tests) is built again; nothing else reads the copy yet.
    landing, warehouse = tmp_path / "resent" / "landing", tmp_path / "resent" / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    (landing / RESENT_FILE).write_text(resent_line + "\n", encoding="utf-8")
    shutil.copy2(demo_run.warehouse, warehouse)
    assert run_pipeline(landing, warehouse, asset_keys=[("raw", "serving_requests"), REQUESTS_STAGING])
    assert RESENT_FILE < REQUESTS_FILE
    assert query(warehouse, kept, [request_id]) == [(RESENT_FILE, 1)]
    bad = f"update raw.serving_requests set status = 'bogus' where source_file = '{RESENT_FILE}' and source_line = 1"
    night = _night(
        tmp_path / "night",
        landing,
        warehouse,
        [bad],
        covering=("raw/serving_requests", "staging/stg_serving__requests", "intermediate/int_requests_costed"),
    )
    assert night.code == HELD_EXIT, night.out + night.err
    assert (
        f"  held: 1 row(s) of serving_requests passed the contract and failed dbt test {STATUS_TEST} (first: "
        f"{RESENT_FILE} line 1), with 1 other delivery of them; quarantined" in night.out
    )
    assert query(
        night.warehouse,
        "select source_file, line, message like '%another delivery of this record failed%' from raw.quarantine "
        "where starts_with(rule, 'dbt:') order by source_file",
    ) == [(RESENT_FILE, 1, False), (REQUESTS_FILE, 5, True)]
    assert _requests_ledger(night.warehouse, RESENT_FILE) == (1, 0, 1)
    rows_in, staged, quarantined = _requests_ledger(warehouse)
    assert _requests_ledger(night.warehouse) == (rows_in, staged - 1, quarantined + 1)
    assert query(night.warehouse, kept, [request_id]) == []
    # The demo's requests but that one (the copy is the same request: with it they are as many as the demo's).
    costed = "select count(*) from intermediate.int_requests_costed"
    assert query(night.warehouse, costed)[0][0] == query(demo_run.warehouse, costed)[0][0] - 1


def _delivered_again(
    con: duckdb.DuckDBPyConnection, table: str, source_file: str, line: int, older: str, changed: str = ""
) -> None:
    """Line ``line`` of ``source_file`` delivered again as line 1 of ``older``, with its own ledger row; ``changed``:
    further ``replace`` items (a column the staging model does not compare)."""
    con.execute(
        f"insert into raw.{table} select * replace ('{older}' as source_file, 1 as source_line{changed}) "
        f"from raw.{table} where source_file = ? and source_line = ?",
        [source_file, line],
    )
    con.execute(
        f"insert into raw.ingested_files select * replace ('{older}' as source_file, 1 as rows_in, 1 as rows_staged, "
        "0 as rows_quarantined) from raw.ingested_files where source_file = ?",
        [source_file],
    )


def _failed_on(model: str, raw_table: str) -> FailedTest:
    """A test on ``model`` (reading ``raw_table``) whose failing rows are stored in scratch.failing."""
    return FailedTest(name="t", path="p.yml", rule="r", model=model, stored="scratch.failing", raw_tables=(raw_table,))


def test_an_invoice_s_accrual_is_held_with_its_failing_billed_line(demo_run, tmp_path):
    """B-7's billed invoice LC-2026-311 was accrued first, in a file named after the invoices' (an accrual is its
    newest line): staging keeps the billed line, from the older file. Holding the billed line alone would let the
    accrual count in its place, so the hold is refused; with the model's record_key the accrual is held with it."""
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(demo_run.warehouse, warehouse)
    invoices, accruals = "services/invoices_2026-11.csv", "services/z_accruals_2026-11.csv"
    with duckdb.connect(str(warehouse)) as con:
        _delivered_again(
            con, "service_invoices", invoices, 2, accruals, ", null as invoiced_on, '2026-11' as service_month"
        )
        kept = "select source_file, source_line from staging.stg_services__invoices where invoice_id = 'LC-2026-311'"
        assert con.execute(kept).fetchall() == [(invoices, 2)]
        con.execute(
            "create schema if not exists scratch; create table scratch.failing as select * from "
            "staging.stg_services__invoices where invoice_id = 'LC-2026-311'"
        )
        before = con.execute("select count(*) from staging.stg_services__invoices").fetchone()[0]
        test = _failed_on("staging.stg_services__invoices", "service_invoices")
        with pytest.raises(HoldRefused):
            hold_rows(con, [test])
        assert hold_rows(con, [replace(test, record_key=("invoice_id",))]) == {"service_invoices": 2}
        assert con.execute("select count(*) from staging.stg_services__invoices").fetchone() == (before - 1,)
        assert con.execute(kept).fetchall() == []
        assert con.execute(
            "select source_file, line, message like '%another delivery of this record%' from raw.quarantine "
            "where rule = 'dbt:t' order by source_file"
        ).fetchall() == [(invoices, 2, False), (accruals, 1, True)]


def test_a_hold_another_row_would_take_the_place_of_is_undone(demo_run, tmp_path):
    """A staging model that keeps one delivery of a record without saying by which key (no record_key): holding the
    newest delivery would let the older one count, so nothing moves and the reason is the error."""
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(demo_run.warehouse, warehouse)
    with duckdb.connect(str(warehouse)) as con:
        _delivered_again(con, "serving_requests", REQUESTS_FILE, 5, "requests/older.jsonl")
        con.execute(
            "create schema if not exists scratch; create view scratch.one_per_request as select * from (select *, "
            "row_number() over (partition by request_id order by source_file desc, source_line desc) as n "
            "from raw.serving_requests) where n = 1"
        )
        con.execute(
            "create table scratch.failing as select * from scratch.one_per_request "
            f"where source_file = '{REQUESTS_FILE}' and source_line = 5"
        )
        before = con.execute("select count(*) from raw.serving_requests").fetchone()
        test = _failed_on("scratch.one_per_request", "serving_requests")
        with pytest.raises(HoldRefused, match="holding 1 row.s. would leave 0 fewer in scratch.one_per_request"):
            hold_rows(con, [test])
        assert con.execute("select count(*) from raw.serving_requests").fetchone() == before
        assert con.execute("select count(*) from raw.quarantine where starts_with(rule, 'dbt:')").fetchone() == (0,)
        # Said by which key, every delivery is held and the model has the failing row fewer.
        assert hold_rows(con, [replace(test, record_key=("request_id",))]) == {"serving_requests": 2}
        assert con.execute("select count(*) from raw.serving_requests").fetchone() == (before[0] - 2,)


def test_a_row_that_fails_two_tests_is_held_once_and_names_both(demo_run, tmp_path):
    """Line 5 fails two tests, line 6 only the second: each raw row is held once (under the first test that failed
    it), and line 5's quarantine message names the second test too, so mending one cause is not taken for all."""
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(demo_run.warehouse, warehouse)
    with duckdb.connect(str(warehouse)) as con:
        con.execute("create schema if not exists scratch")
        con.execute("create view scratch.requests as select * from raw.serving_requests")
        for name, lines in (("first", "(5)"), ("second", "(5, 6)")):
            con.execute(
                f"create table scratch.{name} as select * from raw.serving_requests "
                f"where source_file = '{REQUESTS_FILE}' and source_line in {lines}"
            )
        test = _failed_on("scratch.requests", "serving_requests")
        first, second = (
            replace(test, name="t1", stored="scratch.first"),
            replace(test, stored="scratch.second", name="t2"),
        )
        assert hold_rows(con, [first, second]) == {"serving_requests": 2}
        held = con.execute(
            "select line, rule, message from raw.quarantine where starts_with(rule, 'dbt:') order by line"
        ).fetchall()
    assert [(line, rule) for line, rule, _ in held] == [(5, "dbt:t1"), (6, "dbt:t2")]
    assert held[0][2].endswith("; it failed dbt test t2 too") and "t1" not in held[1][2]


def test_a_failing_row_that_is_not_a_landing_row_fails_the_night_naming_the_test(demo_run, tmp_path):
    """A request without input tokens passes staging's tests and fails on the costed requests, which are built rows,
    not landing rows: nothing is quarantined, and the night fails as it did, naming the test and its stored rows.
    Its month is priced, so its cost, null without a weight, fails the cost's own test too."""
    night = _night(
        tmp_path,
        demo_run.landing,
        demo_run.warehouse,
        ["update raw.serving_requests set input_tokens = null where source_line = 5"],
        covering=("raw/serving_requests", "intermediate/int_requests_costed"),
    )
    assert night.code == 1, night.err
    test = next(
        node
        for node in _manifest()["nodes"].values()
        if node["resource_type"] == "test" and node["name"].startswith("not_null_columns_int_requests_costed_")
    )
    assert night.err.strip().splitlines()[-1] == (
        f"cost-pipeline: the run failed: dbt test {test['name']} ({test['original_file_path']}): "
        "None of `request_id`, `input_bucket`, `output_bucket`, `latency_tier` is null: "
        f"the test returned 1 row (failing values or groups, without their landing files); "
        f"stored in audit.{test['alias']}; 1 more test failed"
    )
    assert f"check {test['name']} on intermediate/int_requests_costed failed" in night.out
    assert "check not_null_int_requests_costed_request_cost_cents on intermediate/int_requests_costed failed" in (
        night.out
    )
    assert query(night.warehouse, "select count(*) from raw.quarantine where starts_with(rule, 'dbt:')") == [(0,)]
    assert query(night.warehouse, f'select null_columns from audit."{test["alias"]}"') == [("input_bucket ",)]


def test_a_gone_files_held_row_goes_back_only_as_it_was_kept(demo_run, tmp_path):
    """release_held_rows puts a held row back exactly (the same text read back as the raw table's columns), with its
    ledger counts; after the contract changed a column's type (hours to whole hours: 6.0 would come back as 6) the
    row would come back altered, so it stays held."""
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(demo_run.warehouse, warehouse)
    with duckdb.connect(str(warehouse)) as con:
        (source_file,) = con.execute("select min(source_file) from raw.timesheets").fetchone()
        ledger = "select rows_staged, rows_quarantined from raw.ingested_files where source_file = ?"
        (before,) = con.execute(ledger, [source_file]).fetchall()
        raw = "select * from raw.timesheets where source_file = ? order by source_line"
        rows = con.execute(raw, [source_file]).fetchall()

        def hold() -> None:
            con.execute(
                "insert into raw.quarantine (source, source_file, file_sha256, line, rule, message, raw_text) "
                "select 'timesheets', source_file, file_sha256, source_line, 'dbt:t', 'm', cast(to_json(r) as varchar) "
                "from raw.timesheets as r where source_file = ? and source_line = 2",
                [source_file],
            )
            con.execute("delete from raw.timesheets where source_file = ? and source_line = 2", [source_file])
            con.execute(
                "update raw.ingested_files set rows_staged = rows_staged - 1, rows_quarantined = rows_quarantined + 1 "
                "where source_file = ?",
                [source_file],
            )

        hold()
        assert release_held_rows(con, "timesheets", [source_file]) == [(source_file, 1)]
        assert con.execute(raw, [source_file]).fetchall() == rows
        assert con.execute(ledger, [source_file]).fetchall() == [before]
        assert con.execute("select count(*) from raw.quarantine where rule = 'dbt:t'").fetchone() == (0,)

        hold()
        con.execute("alter table raw.timesheets alter hours type integer")
        assert release_held_rows(con, "timesheets", [source_file]) == []
        assert con.execute("select count(*) from raw.quarantine where rule = 'dbt:t'").fetchone() == (1,)


def test_a_timesheet_entry_exported_again_is_held_in_every_export(demo_run, tmp_path):
    """Harvest exports a month to date again and again: an entry has no id, and staging keeps one of its identical
    lines, from the newest export. The model's meta names the columns it does not compare, so every copy of the entry
    is held. Held alone, the newest copy lets no older one count either: that lies inside what the newest export
    covers, read from every row of the file, held ones too (raw.timesheets_extent). Line 2, Alice's only data
    preparation, on the export's first day, took the task and the day out of a box read from raw: the older copy
    counted in its place and such a hold was refused."""
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(demo_run.warehouse, warehouse)
    manifest = _manifest()
    staging = manifest["nodes"]["model.cost_pipeline.stg_timesheets__entries"]
    ignore = tuple(staging["config"]["meta"]["identical_lines_ignore"])
    older = "timesheets/a_month_to_date_export.csv"  # sorts first: the older export
    with duckdb.connect(str(warehouse)) as con:
        (newest,) = con.execute("select max(source_file) from raw.timesheets").fetchone()
        _delivered_again(con, "timesheets", newest, 2, older, ", 'Other client' as client")
        con.execute(
            "create schema if not exists scratch; create table scratch.failing as select * from "
            "staging.stg_timesheets__entries where source_file = ? and source_line = 2",
            [newest],
        )
        before = con.execute("select count(*) from staging.stg_timesheets__entries").fetchone()[0]
    test = _failed_on("staging.stg_timesheets__entries", "timesheets")
    alone = tmp_path / "held_alone.duckdb"
    shutil.copyfile(warehouse, alone)
    with duckdb.connect(str(alone)) as con:
        assert hold_rows(con, [test]) == {"timesheets": 1}
        assert con.execute("select count(*) from staging.stg_timesheets__entries").fetchone() == (before - 1,)
        assert con.execute(
            "select count(*) from staging.stg_timesheets__entries where source_file = ?", [older]
        ).fetchone() == (0,)
    with duckdb.connect(str(warehouse)) as con:
        assert hold_rows(con, [replace(test, identical_lines_ignore=ignore)]) == {"timesheets": 2}
        assert con.execute("select count(*) from staging.stg_timesheets__entries").fetchone() == (before - 1,)
        assert con.execute(
            "select source_file, line from raw.quarantine where rule = 'dbt:t' order by source_file"
        ).fetchall() == [(older, 1), (newest, 2)]


def test_an_entry_logged_twice_in_an_export_holds_only_the_failing_copy(demo_run, tmp_path):
    """Two lines of one export that differ only in columns staging does not compare (the notes) are two entries: both
    count. One fails a test: that copy is held, with the same copy of the entry in the older export (which would take
    its place), and the other copy still counts in both exports' order."""
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(demo_run.warehouse, warehouse)
    staging = _manifest()["nodes"]["model.cost_pipeline.stg_timesheets__entries"]
    ignore = tuple(staging["config"]["meta"]["identical_lines_ignore"])
    older = "timesheets/a_month_to_date_export.csv"  # sorts first: the older export
    with duckdb.connect(str(warehouse)) as con:
        (newest,) = con.execute("select max(source_file) from raw.timesheets").fetchone()
        copy = "select * replace (? as source_file, ? as source_line, ? as notes) from raw.timesheets "
        place = "where source_file = ? and source_line = 2"
        for file, line, notes in ((newest, 900, "logged twice"), (older, 1, "first"), (older, 2, "second")):
            con.execute(f"insert into raw.timesheets {copy}{place}", [file, line, notes, newest])
        con.execute(
            "insert into raw.ingested_files select * replace (? as source_file, 2 as rows_in, 2 as rows_staged, "
            "0 as rows_quarantined) from raw.ingested_files where source_file = ?",
            [older, newest],
        )
        con.execute(
            "update raw.ingested_files set rows_in = rows_in + 1, rows_staged = rows_staged + 1 where source_file = ?",
            [newest],
        )
        entry = "select source_file, source_line from staging.stg_timesheets__entries where notes = 'logged twice'"
        assert con.execute(entry).fetchall() == [(newest, 900)]  # both copies of the newest export count
        con.execute(
            "create schema if not exists scratch; create table scratch.failing as select * from "
            "staging.stg_timesheets__entries where source_file = ? and source_line = 900",
            [newest],
        )
        before = con.execute("select count(*) from staging.stg_timesheets__entries").fetchone()[0]
        test = replace(_failed_on("staging.stg_timesheets__entries", "timesheets"), identical_lines_ignore=ignore)
        assert hold_rows(con, [test]) == {"timesheets": 2}
        assert con.execute("select count(*) from staging.stg_timesheets__entries").fetchone() == (before - 1,)
        assert con.execute(
            "select source_file, line from raw.quarantine where rule = 'dbt:t' order by source_file"
        ).fetchall() == [(older, 2), (newest, 900)]
        # The other copy still counts once, from the newest export; the older export's copy 1 stays behind it.
        kept = "select source_file, source_line from staging.stg_timesheets__entries where source_file in (?, ?) "
        assert con.execute(kept + "and source_line in (1, 2, 900)", [older, newest]).fetchall() == [(newest, 2)]


@pytest.mark.parametrize(
    ("model", "source", "older"),
    [
        ("stg_steps__training_steps", "training_steps", "steps/a_step_file_shipped_before.jsonl"),
        ("stg_registry__rounds", "batch_rounds", "registry/a_rounds_export_before.csv"),
        ("stg_services__invoices", "service_invoices", "services/a_invoices_exported_before.csv"),
    ],
)
def test_a_record_delivered_before_is_held_in_every_delivery(demo_run, tmp_path, model, source, older):
    """A step file, a rounds export or an invoice file shipped again: staging keeps each step (job, number, start),
    each round (batch, number) and each invoice (its id) once, from the newest file. Holding the newest copy alone
    would let the older one count in its place, so the hold is refused; with the model's meta record_key both copies
    are held, and the model has exactly one row fewer."""
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(demo_run.warehouse, warehouse)
    record_key = tuple(_manifest()["nodes"][f"model.cost_pipeline.{model}"]["config"]["meta"]["record_key"])
    with duckdb.connect(str(warehouse)) as con:
        (newest,) = con.execute(f"select max(source_file) from raw.{source}").fetchone()
        assert older < newest  # an older delivery by staging's order (file name)
        _delivered_again(con, source, newest, 3, older)
        con.execute(
            f"create schema if not exists scratch; create table scratch.failing as select * from staging.{model} "
            "where source_file = ? and source_line = 3",
            [newest],
        )
        before = con.execute(f"select count(*) from staging.{model}").fetchone()[0]
        test = _failed_on(f"staging.{model}", source)
        with pytest.raises(HoldRefused):
            hold_rows(con, [test])
        assert hold_rows(con, [replace(test, record_key=record_key)]) == {source: 2}
        assert con.execute(f"select count(*) from staging.{model}").fetchone() == (before - 1,)
        assert con.execute(
            "select source_file, line from raw.quarantine where rule = 'dbt:t' order by source_file"
        ).fetchall() == [(older, 1), (newest, 3)]
