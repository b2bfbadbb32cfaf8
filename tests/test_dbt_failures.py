"""An error-severity dbt test that fails names the landing file and line of each failing row (issue 10).

A value that gets past the contract and fails a dbt test is a contract defect; until it is fixed, the night's error
says where the value came from, and the failing rows are stored in `audit` (cost_pipeline/dbt_failures.py,
dbt_project/macros/failing_source_rows.sql). The night below is the session's demo night run again on a copy whose
raw requests were changed behind the contract's back, as a defect of the contract would let them through: the
requests file is unchanged, so the night keeps its raw rows (the incremental load) and dbt sees the bad values.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from dagster._utils.error import SerializableErrorInfo

from cost_pipeline.cli import main
from cost_pipeline.dbt_failures import FailedTest, failed_tests, failure_report
from cost_pipeline.dbt_setup import manifest_path
from cost_pipeline.progress import root_cause
from tests.helpers import query

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
            {"unique_id": "model.cost_pipeline.stg_serving__requests", "status": "error"},
        ]
    }
    (failed,) = failed_tests(results, manifest)
    assert failed == FailedTest(
        name=STATUS_TEST,
        path="models/staging/serving/_serving__models.yml",
        rule="`status` is a value of the contract's `request_status` enumeration, in the row's contract version",
        model="staging.stg_serving__requests",
        stored=f"audit.{status['alias']}",
    )


def test_the_root_cause_is_the_first_failed_test_with_its_files_and_lines():
    first = FailedTest(
        "t_one",
        "models/a.yml",
        "No two rows share a `k`",
        "staging.a",
        "audit.t_one",
        3,
        (("a/x.csv", 4), ("a/x.csv", 9)),
        1,
    )
    built = FailedTest("t_two", "models/b.yml", "One row per `m`", "marts.b", "audit.t_two", 1)
    unread = FailedTest("t_three", "models/c.yml", "`c` is never null", None, "audit.t_three")
    report = failure_report([first, built, unread], "dbt's own error")
    error = SerializableErrorInfo(
        'Error occurred while executing op "cost_models":',
        [],
        "Error",
        cause=SerializableErrorInfo(f"cost_pipeline.defs.dbt.DbtTestsFailed: {report}", [], "DbtTestsFailed"),
    )
    assert root_cause("cost_models", error) == (
        "dbt test t_one (models/a.yml): No two rows share a `k`: 3 rows of staging.a break it, from a/x.csv line 4, "
        "a/x.csv line 9 and 1 more; all in audit.t_one; 2 more tests failed"
    )
    assert "  One row per `m`: 1 row of marts.b break it (no landing file: the rows are built); all in audit.t_two" in (
        report
    )
    assert "  `c` is never null: its failing rows could not be read back from audit.t_three" in report
    assert report.endswith("\n\ndbt's own error")


@dataclass(frozen=True)
class FailedNight:
    landing: Path
    warehouse: Path
    code: int
    out: str
    err: str


@pytest.fixture(scope="module")
def failed_night(demo_run, tmp_path_factory: pytest.TempPathFactory) -> FailedNight:
    """The demo night again, its raw requests changed behind the contract: lines 5 and 7 have a status that is no
    contract code, line 9 has no model."""
    assert demo_run.succeeded
    root = tmp_path_factory.mktemp("dbt_failures")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    shutil.copy2(demo_run.warehouse, warehouse)
    with duckdb.connect(str(warehouse)) as con:
        con.execute("update raw.serving_requests set status = 'bogus' where source_line in (5, 7)")
        con.execute("update raw.serving_requests set model = null where source_line = 9")
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["run", "--landing", str(landing), "--warehouse", str(warehouse)])
    return FailedNight(landing, warehouse, code, out.getvalue(), err.getvalue())


def test_the_night_fails_naming_the_landing_file_and_lines(failed_night):
    assert failed_night.code == 1
    assert failed_night.err.strip().splitlines()[-1] == (
        f"cost-pipeline: the run failed: dbt test {STATUS_TEST} (models/staging/serving/_serving__models.yml): "
        "`status` is a value of the contract's `request_status` enumeration, in the row's contract version: "
        f"2 rows of staging.stg_serving__requests break it, from {REQUESTS_FILE} line 5, {REQUESTS_FILE} line 7; "
        f"all in audit.{_test_node(_manifest(), STATUS_TEST)['alias']}; 1 more test failed"
    )
    assert f"check {NOT_NULL_TEST} on staging/stg_serving__requests failed" in failed_night.out


def test_the_stored_failing_rows_are_the_landing_rows(failed_night):
    """Each stored row is the model's row, with its file and line; that line of that file is the same request."""
    manifest = _manifest()
    status = _test_node(manifest, STATUS_TEST)["alias"]
    not_null = _test_node(manifest, NOT_NULL_TEST)["alias"]
    stored = query(
        failed_night.warehouse,
        f'select request_id, status, source_file, source_line from audit."{status}" order by source_line',
    )
    lines = (failed_night.landing / REQUESTS_FILE).read_text(encoding="utf-8").splitlines()
    assert [(file, line, status) for _, status, file, line in stored] == [
        (REQUESTS_FILE, 5, "bogus"),
        (REQUESTS_FILE, 7, "bogus"),
    ]
    assert [json.loads(lines[line - 1])["request_id"] for *_, line in stored] == [r for r, *_ in stored]
    assert query(failed_night.warehouse, f'select null_columns, source_file, source_line from audit."{not_null}"') == [
        ("model ", REQUESTS_FILE, 9)
    ]
