"""A failed dbt build still publishes the marts it rebuilt; each mart it did not rebuild keeps its last published copy.

The demo night is run again with one request's input tokens made null behind the contract: the costed requests
(built rows, not landing rows) fail a not-null test, so dbt skips every model downstream of them and the night fails
(exit 1, naming the test). The marts that do not depend on the costed requests are published from tonight's build;
the others keep the copy the demo night published, rows and ``as_of`` as they were, and ``main.stale`` names them in
both files. The night after, mended, publishes every mart again and ``main.stale`` is empty.
"""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from cost_pipeline.dagster_home import last_good_night, warehouse_instance
from cost_pipeline.defs.publish import publish_after_failed_build, publishes_after
from cost_pipeline.model_builds import BUILT, FAILED_TEST, NOT_FINISHED, SKIPPED, outcomes, unbuilt
from cost_pipeline.publish import (
    AS_OF,
    ENGINEERING,
    FINANCE,
    MARTS,
    PUBLISHED,
    RULES_DIGEST,
    STALE,
    kept_marts,
    parquet_folder,
    publish,
    published_path,
)
from tests.helpers import Night, cli_night

pytestmark = pytest.mark.xdist_group("partial_publish")

TAMPER = "update raw.serving_requests set input_tokens = null where source_line = 5"
# The marts downstream of intermediate.int_requests_costed: the serving book and what prices tasks by its requests.
SKIPPED_MARTS = {
    "fct_model_task_economics",
    "fct_request_group_costs",
    "fct_service_month",
    "fct_task_costs",
    "fct_task_routing",
    "fct_tenant_service_costs",
}


def _run(root: Path, statements: list[str]) -> Night:
    return cli_night(root / "landing", root / "warehouse.duckdb", statements)


@pytest.fixture(scope="module")
def demo_root(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo night: landing folder, warehouse, published files and Dagster home."""
    assert demo_run.succeeded
    root = tmp_path_factory.mktemp("partial") / "night"
    shutil.copytree(demo_run.warehouse.parent, root, ignore=shutil.ignore_patterns("*.lock"))
    return root


@pytest.fixture(scope="module")
def before(demo_root) -> dict[str, dict[str, list[tuple]]]:
    """audience -> mart -> rows, as the demo night published them."""
    return {audience: _published(demo_root / "warehouse.duckdb", audience) for audience in (FINANCE, ENGINEERING)}


@pytest.fixture(scope="module")
def failed(demo_root, before) -> Night:
    return _run(demo_root, [TAMPER])


def _published(warehouse: Path, audience: str) -> dict[str, list[tuple]]:
    with duckdb.connect(str(published_path(warehouse, audience)), read_only=True) as con:
        tables = [
            t
            for (t,) in con.execute(f"select table_name from duckdb_tables() where schema_name = '{MARTS}'").fetchall()
        ]
        return {t: con.execute(f'select * from {MARTS}."{t}" order by all').fetchall() for t in tables}


def _published_query(warehouse: Path, audience: str, sql: str) -> list[tuple]:
    with duckdb.connect(str(published_path(warehouse, audience)), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_the_failed_night_fails_naming_the_test_and_lists_the_marts_kept(failed):
    assert failed.code == 1, failed.err
    last = failed.err.strip().splitlines()[-1]
    assert last.startswith("cost-pipeline: the run failed: dbt test not_null_columns_int_requests_costed_"), last
    stale_lines = sorted(line for line in failed.out.splitlines() if line.startswith("stale: marts."))
    assert [line.split()[1] for line in stale_lines] == [f"marts.{m}" for m in sorted(SKIPPED_MARTS)]
    assert "The published files hold the marts it rebuilt; 6 kept their last published copy (main.stale" in failed.out


def test_the_builds_outcomes_name_the_failed_model_and_what_dbt_skipped(failed):
    with duckdb.connect(str(failed.warehouse), read_only=True) as con:
        assert unbuilt(con, "intermediate")["int_requests_costed"] == FAILED_TEST
        assert unbuilt(con, MARTS) == dict.fromkeys(sorted(SKIPPED_MARTS), SKIPPED)
        (built,) = con.execute(
            "select count(*) from ops.model_builds where model_schema = 'marts' and status = ?", [BUILT]
        ).fetchone()
        (marts,) = con.execute("select count(*) from duckdb_tables() where schema_name = 'marts'").fetchone()
    assert built == marts - len(SKIPPED_MARTS)


@pytest.mark.parametrize("audience", [FINANCE, ENGINEERING])
def test_rebuilt_marts_are_tonights_and_the_others_are_the_last_published_copy(failed, before, audience):
    after = _published(failed.warehouse, audience)
    (tonight,) = _published_query(failed.warehouse, audience, f"select {AS_OF} from main.{PUBLISHED}")[0]
    (demo_night,) = {row[-1] for row in before[audience]["dim_batches"]}
    assert tonight > demo_night
    assert set(after) == set(before[audience])
    kept = SKIPPED_MARTS
    for mart, rows in after.items():
        if mart in kept:
            assert rows == before[audience][mart], mart  # as they were, as_of included
        else:
            assert {row[-1] for row in rows} <= {tonight}, mart
            assert [row[:-1] for row in rows] == [row[:-1] for row in before[audience][mart]], mart  # same landing
    stale = _published_query(failed.warehouse, audience, f"select mart, reason, {AS_OF} from main.{STALE} order by 1")
    assert [(mart, night) for mart, _, night in stale] == [(mart, demo_night) for mart in sorted(kept)]
    reasons = {mart: reason for mart, reason, _ in stale}
    assert set(reasons.values()) == {"its last build ended: skipped"}


def test_a_kept_marts_parquet_file_is_its_last_copy(failed, before):
    folder = parquet_folder(failed.warehouse, FINANCE)
    with duckdb.connect() as con:
        rows = con.execute(f"select * from read_parquet('{folder / 'fct_service_month.parquet'}') order by all")
        assert rows.fetchall() == before[FINANCE]["fct_service_month"]
        (stamp,) = con.execute(
            f"select value from parquet_kv_metadata('{folder / 'fct_service_month.parquet'}') where key = 'as_of'"
        ).fetchone()
    assert stamp.decode() == before[FINANCE]["fct_service_month"][0][-1].isoformat()


def test_a_partial_publication_is_not_the_last_good_night(failed, before):
    (demo_night,) = {row[-1] for row in before[FINANCE]["dim_batches"]}
    assert last_good_night(failed.warehouse) == demo_night


def test_the_sensor_publishes_after_a_failed_build_and_not_after_a_failed_load(failed, monkeypatch):
    monkeypatch.setenv("COST_WAREHOUSE", str(failed.warehouse))
    with warehouse_instance(failed.warehouse) as instance:
        (night,) = instance.get_runs(filters=dg.RunsFilter(job_name="nightly_cost_refresh_job"), limit=1)
        (failure,) = instance.all_logs(night.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        with dg.build_run_status_sensor_context(
            sensor_name=publish_after_failed_build.name,
            dagster_event=failure.dagster_event,
            dagster_instance=instance,
            dagster_run=night,
        ).for_run_failure() as context:
            request = publish_after_failed_build(context)
        one_model = night._replace(asset_selection=frozenset({dg.AssetKey(["marts", "dim_batches"])}))
        with dg.build_run_status_sensor_context(  # an engineer's run of one model: it never meant to publish
            sensor_name=publish_after_failed_build.name,
            dagster_event=failure.dagster_event,
            dagster_instance=instance,
            dagster_run=one_model,
        ).for_run_failure() as context:
            assert isinstance(publish_after_failed_build(context), dg.SkipReason)
    assert isinstance(request, dg.RunRequest) and request.run_key == night.run_id
    assert publish_after_failed_build.job_name == "publish_after_failed_build"
    assert publishes_after(["cost_models"], failed.warehouse, night.run_id)
    assert not publishes_after(["raw__serving_requests"], failed.warehouse, night.run_id)  # dbt did not run
    assert not publishes_after(["cost_models"], failed.warehouse, "another run")  # its outcomes were not recorded


def test_the_night_after_mended_publishes_every_mart(failed, demo_root):
    with duckdb.connect(str(demo_root / "warehouse.duckdb"), read_only=True) as con:
        assert con.execute("select input_tokens from raw.serving_requests where source_line = 5").fetchall() == [
            (None,)
        ]
    mended = _run(demo_root, ["update raw.serving_requests set input_tokens = 1 where source_line = 5"])
    assert mended.code == 0, mended.err
    assert _published_query(mended.warehouse, FINANCE, f"select count(*) from main.{STALE}") == [(0,)]
    assert "stale: marts." not in mended.out


def test_outcomes_mark_a_model_whose_error_test_failed_and_keep_warnings():
    manifest = {
        "nodes": {
            "model.p.a": {"resource_type": "model"},
            "model.p.b": {"resource_type": "model"},
            "model.p.c": {"resource_type": "model"},
            "test.p.t1": {"resource_type": "test", "attached_node": "model.p.a", "depends_on": {"nodes": []}},
            "test.p.t2": {"resource_type": "test", "attached_node": None, "depends_on": {"nodes": ["model.p.c"]}},
            "test.p.t3": {"resource_type": "test", "attached_node": "model.p.c", "depends_on": {"nodes": []}},
            # sums of two models that must match: either may be the wrong one
            "test.p.t4": {
                "resource_type": "test",
                "attached_node": "model.p.d",
                "depends_on": {"nodes": ["model.p.e"]},
            },
            "model.p.d": {"resource_type": "model"},
            "model.p.e": {"resource_type": "model"},
        }
    }
    results = {
        "results": [
            {"unique_id": "model.p.a", "status": "success"},
            {"unique_id": "model.p.b", "status": "skipped"},
            {"unique_id": "model.p.c", "status": "success"},
            {"unique_id": "test.p.t1", "status": "fail"},
            {"unique_id": "test.p.t3", "status": "warn"},
        ]
    }
    assert outcomes(results, manifest) == {"model.p.a": FAILED_TEST, "model.p.b": SKIPPED, "model.p.c": BUILT}
    results["results"].append({"unique_id": "test.p.t2", "status": "error"})
    assert outcomes(results, manifest)["model.p.c"] == FAILED_TEST
    assert NOT_FINISHED not in outcomes(results, manifest).values()
    results["results"] += [{"unique_id": u, "status": "success"} for u in ("model.p.d", "model.p.e")]
    results["results"].append({"unique_id": "test.p.t4", "status": "fail"})
    assert {u: outcomes(results, manifest)[u] for u in ("model.p.d", "model.p.e")} == dict.fromkeys(
        ("model.p.d", "model.p.e"), FAILED_TEST
    )


def test_a_confidentiality_rule_keeps_its_marts_together():
    marts = {"fct_cost_lines", "fct_batch_costs", "fct_batch_budget", "fct_batch_forecast", "fct_batch_cost_history"}
    kept = kept_marts({"fct_batch_cost_history": SKIPPED}, marts | {"dim_batches"})
    assert set(kept) == marts  # the history spans its latest tables, whose complement spans the cost lines
    assert kept["fct_batch_cost_history"] == "its last build ended: skipped"
    assert kept_marts({}, marts) == {}


def _skipped(demo_run, copy: Path, mart: str, previous: str) -> Path:
    """A copy of the demo night in ``copy`` whose last build skipped ``mart``, after ``previous`` ran on its
    published files."""
    shutil.copytree(demo_run.warehouse.parent, copy, ignore=shutil.ignore_patterns("*.lock"))
    warehouse = copy / "warehouse.duckdb"
    with duckdb.connect(str(warehouse)) as con:
        con.execute("update ops.model_builds set status = ? where model_name = ?", [SKIPPED, mart])
    for audience in (FINANCE, ENGINEERING):
        with duckdb.connect(str(published_path(warehouse, audience))) as con:
            con.execute(previous)
    return warehouse


def test_a_kept_mart_without_rows_keeps_its_night_and_its_parquet_file(demo_run, tmp_path):
    warehouse = _skipped(demo_run, tmp_path / "night", "fct_service_month", "delete from marts.fct_service_month")
    (before,) = _published_query(warehouse, FINANCE, f"select {AS_OF} from main.{PUBLISHED}")[0]
    publication = publish(warehouse, as_of=before + timedelta(days=1))
    assert publication.stale == {"fct_service_month": ("its last build ended: skipped", before)}
    for audience in (FINANCE, ENGINEERING):
        assert _published_query(warehouse, audience, f"select mart, {AS_OF} from main.{STALE}") == [
            ("fct_service_month", before)
        ]
        assert _published_query(warehouse, audience, "select count(*) from marts.fct_service_month") == [(0,)]
        assert (parquet_folder(warehouse, audience) / "fct_service_month.parquet").is_file()


def test_a_mart_is_not_kept_from_files_made_under_other_confidentiality_rules(demo_run, tmp_path):
    """The engineering copy was blanked by the rules of its night: under other rules it could show what they blank."""
    warehouse = _skipped(
        demo_run, tmp_path / "night", "fct_task_costs", f"update main.{PUBLISHED} set {RULES_DIGEST} = 'other rules'"
    )
    publication = publish(warehouse)
    assert publication.stale == {
        "fct_task_costs": ("its last build ended: skipped", None),
        "fct_model_task_economics": ("kept with fct_task_costs, which a confidentiality rule spans with it", None),
    }
    for audience in (FINANCE, ENGINEERING):
        assert "fct_task_costs" not in _published(warehouse, audience)
        assert not (parquet_folder(warehouse, audience) / "fct_task_costs.parquet").exists()
        assert _published_query(warehouse, audience, f"select mart, {AS_OF} from main.{STALE} order by 1") == [
            ("fct_model_task_economics", None),
            ("fct_task_costs", None),
        ]
