"""stg_serving__requests and int_requests_costed are built again only for the months whose inputs changed (issue 15:
a night pays for the new day's files, not for history; R13 shares a model-month's spend over its requests, so a
month is built again whole), and what they keep plus what they build is what a full build gives. Nights over one
landing folder: the demo's with request logs of October and December beside November's, loaded by the nightly job's
ingest; the request models are then built incrementally, the months they built read from their SQL, and the tables
compared with a full refresh after each change: a late file for an old month, a new month's file, an old month's
file delivered again, a retraction, a model-month's spend, the contract's allocation key."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest

from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, dbt_project
from tests.helpers import dbt_in_process, dbt_target, query

if TYPE_CHECKING:
    from dbt.contracts.graph.manifest import Manifest

pytestmark = pytest.mark.xdist_group("requests_incremental")

MODELS = ("stg_serving__requests", "int_requests_costed")
COMPARED = ("staging.stg_serving__requests", "intermediate.int_requests_costed")
# What a full refresh builds again: the inputs table and the two models (their ancestors are the run's own).
FROM_INPUTS = "int_requests_inputs+,+int_requests_costed"
DEMO_LOG = Path("requests") / "requests_2026-11.jsonl"
NOVEMBER, DECEMBER, OCTOBER = date(2026, 11, 1), date(2026, 12, 1), date(2026, 10, 1)


def _month_log(landing: Path, month: str, name: str, edit=None) -> None:
    """A request log of ``month`` (YYYY-MM): the demo's November log with its times moved to that month (November's
    30 days fit every month but February), each line through ``edit`` (a dict in, a dict out) when given."""
    lines = []
    for line in (landing / DEMO_LOG).read_text(encoding="utf-8").splitlines():
        request = json.loads(line)
        request["requested_at"] = request["requested_at"].replace("2026-11-", f"{month}-")
        lines.append(json.dumps(edit(request) if edit else request))
    (landing / "requests" / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _ingest(landing: Path, warehouse: Path, *sources: str) -> None:
    """The nightly job's ingest of ``sources`` alone (their raw assets): raw as a night loads it."""
    from cost_pipeline.cli import run_pipeline

    assert run_pipeline(landing, warehouse, asset_keys=[["raw", source] for source in sources])


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    """The project parsed once, for a warehouse named warehouse.duckdb: each run starts from it."""
    folder = tmp_path_factory.mktemp("parse")
    target = dbt_target(folder, folder / "warehouse.duckdb")
    return dbt_in_process(folder, "parse", "--target-path", str(target), "--log-path", str(folder / "logs")).result


@pytest.fixture(scope="module")
def night(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo night (its landing folder, warehouse and Dagster home), changed night after night."""
    return demo_run.copy_to(tmp_path_factory.mktemp("requests") / "night")


def _run(manifest: Manifest, folder: Path, *args: str, select: str = "+int_requests_costed") -> None:
    dbt_in_process(
        folder,
        "run",
        "--select",
        select,
        *args,
        "--target-path",
        str(folder / "target"),
        "--log-path",
        str(folder / "logs"),
        "--no-write-json",
        manifest=manifest,
    )


def _rows(warehouse: Path) -> dict[str, list[tuple]]:
    return {table: query(warehouse, f"select * from {table} order by all") for table in COMPARED}


def _months_built(folder: Path) -> dict[str, list[tuple[date, date]] | None]:
    """The month ranges [first month, the month after the last) each model built again in the last run, as its SQL
    names them; None for every month."""
    built = {}
    for model in MODELS:
        sql = next((folder / "target" / "compiled").rglob(f"{model}.sql")).read_text()
        bounds = [date.fromisoformat(b) for b in re.findall(r"requested_at (?:>=|<) cast\('(\d{4}-\d{2}-\d{2})", sql)]
        nothing = re.search(r"(?<![\w.])1 = 0", sql)  # periods_where of no range
        built[model] = sorted(set(zip(bounds[::2], bounds[1::2], strict=True))) if bounds else [] if nothing else None
    return built


def _incremental_equals_full(manifest: Manifest, folder: Path) -> dict[str, list[tuple[date, date]] | None]:
    """Build the request models incrementally, then compare them with a full refresh of the same raw tables, row for
    row and column for column; returns the months each built again."""
    warehouse = folder / "warehouse.duckdb"
    before = _rows(warehouse)
    _run(manifest, folder)
    months, incremental = _months_built(folder), _rows(warehouse)
    assert incremental != before  # every change below changes some request's figures
    _run(manifest, folder, "--full-refresh", select=FROM_INPUTS)
    assert _rows(warehouse) == incremental
    return months


def test_a_night_builds_again_only_the_months_whose_requests_or_spend_changed(manifest: Manifest, night: Path):
    landing, warehouse = night / "landing", night / "warehouse.duckdb"
    demo = _rows(warehouse)
    _run(manifest, night)  # the demo night's inputs are the ones kept: no month to build again
    assert _months_built(night) == {model: [] for model in MODELS}
    assert _rows(warehouse) == demo

    # A late file for an old month: October only.
    _month_log(landing, "2026-10", "requests_2026-10.jsonl")
    _ingest(landing, warehouse, "serving_requests")
    assert _incremental_equals_full(manifest, night) == {model: [(OCTOBER, NOVEMBER)] for model in MODELS}

    # A new month's file: December only; October's and November's rows are kept as built.
    _month_log(landing, "2026-12", "requests_2026-12.jsonl")
    _ingest(landing, warehouse, "serving_requests")
    assert _incremental_equals_full(manifest, night) == {model: [(DECEMBER, date(2027, 1, 1))] for model in MODELS}
    kept = _rows(warehouse)

    # October's log delivered again under another name, its requests' ids in capitals and their output doubled: the
    # newer delivery of each request wins, in October only.
    def redelivered(request: dict) -> dict:
        return {**request, "request_id": request["request_id"].upper(), "output_tokens": 2 * request["output_tokens"]}

    _month_log(landing, "2026-10", "requests_2026-10_again.jsonl", redelivered)
    _ingest(landing, warehouse, "serving_requests")
    assert _incremental_equals_full(manifest, night) == {model: [(OCTOBER, NOVEMBER)] for model in MODELS}
    assert query(warehouse, "select count(*) from staging.stg_serving__requests") == [(len(kept[COMPARED[0]]),)]

    # December's log retracted (cost-pipeline retract), then the next night's ingest: December only, its requests gone.
    from cost_pipeline.retract import retract

    retract(warehouse, "requests/requests_2026-12.jsonl", "a test of the months built again")
    _ingest(landing, warehouse, "serving_requests")
    assert _incremental_equals_full(manifest, night) == {model: [(DECEMBER, date(2027, 1, 1))] for model in MODELS}
    assert query(
        warehouse, f"select count(*) from staging.stg_serving__requests where requested_at >= '{DECEMBER}'"
    ) == [(0,)]

    # November's operations cost rises: its model-months' spend changes, and int_requests_costed shares it again in
    # November only; the staged requests do not read the spend.
    costs = landing / "serving" / "monthly_costs.csv"
    costs.write_text(
        costs.read_text(encoding="utf-8").replace("2026-11,operations,2000.00", "2026-11,operations,2600.00")
    )
    _ingest(landing, warehouse, "serving_monthly_costs")
    assert _incremental_equals_full(manifest, night) == {
        "stg_serving__requests": [],
        "int_requests_costed": [(NOVEMBER, DECEMBER)],
    }

    # The contract's allocation key changes (output tokens weigh more): every month of int_requests_costed, and of
    # the staged requests (whose tests read the contract).
    con = duckdb.connect(str(warehouse))
    try:
        con.execute("update raw.contract_parameters set value = value + 1 where name = 'serving_output_token_weight'")
    finally:
        con.close()
    assert _incremental_equals_full(manifest, night) == {model: None for model in MODELS}


def test_the_code_fingerprint_renders_every_macro_the_request_models_call():
    """request_months_code (macros/request_months.sql) renders the project's macros the request models call: a change
    to one of them builds every month again."""
    manifest = json.loads(dbt_project.manifest_path.read_text())
    rendered = (DBT_PROJECT_DIR / "macros" / "request_months.sql").read_text().split("macro request_months_code(")[1]
    rules = rendered.split("set rules = [")[1].split("]")[0]
    listed = {rule.strip() for rule in rules.split(",") if rule.strip()}
    named = {"kept_inputs", "request_months_code"}
    for model in MODELS:
        called = (
            {
                macro.split(".")[-1]
                for macro in manifest["nodes"][f"model.cost_pipeline.{model}"]["depends_on"]["macros"]
                if macro.startswith("macro.cost_pipeline.")
            }
            - listed
            - named
            - {"log_row_count"}
        )
        missing = {macro for macro in called if f"{macro.split('__')[-1]}(" not in rendered}
        assert not missing, f"request_months_code does not render {sorted(missing)} ({model})"
