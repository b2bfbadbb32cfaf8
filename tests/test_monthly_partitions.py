"""Monthly partitions (docs/operations.md "Monthly partitions"): a month's journal, FOCUS export, team statements and
month-keyed marts written beside the warehouse by a partition run, one month at a time, and the sensor that
refreshes the open months after a night. Every test reads a copy of the session's demo night (its warehouse and its
Dagster home)."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from cost_pipeline import duckdb_session
from cost_pipeline.cli import main, run_months
from cost_pipeline.contract import load_contract
from cost_pipeline.dagster_home import last_good_night, warehouse_instance
from cost_pipeline.defs.monthly import (
    COST_MARTS,
    FOCUS,
    JOURNAL,
    STATEMENTS,
    month_keyed_marts,
    monthly_after_nightly,
    monthly_partitions,
    months_to_refresh,
    previous_month,
)
from cost_pipeline.journal import close_month, next_month
from cost_pipeline.monthly import month_folder, month_marts
from tests.helpers import query

pytestmark = pytest.mark.xdist_group("monthly_partitions")

NOVEMBER, OCTOBER = date(2026, 11, 1), date(2026, 10, 1)  # the demo's month, and the month before it (no cost)


def _copy(demo_run, root: Path) -> Path:
    """The demo night's warehouse and its Dagster home (the folder beside it) copied into ``root``."""
    root.mkdir()
    shutil.copy2(demo_run.warehouse, root / "warehouse.duckdb")
    shutil.copytree(demo_run.warehouse.with_name("warehouse.dagster"), root / "warehouse.dagster")
    return root / "warehouse.duckdb"


@pytest.fixture(scope="module")
def warehouse(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert demo_run.succeeded
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        copied = _copy(demo_run, tmp_path_factory.mktemp("monthly") / "night")
        # A backfill over two months: one partition run per month, in the warehouse's instance.
        assert [(key, ok) for key, ok, _ in run_months(copied, ["2026-10", "2026-11"])] == [
            ("2026-10", True),
            ("2026-11", True),
        ]
    return copied


@pytest.fixture(autouse=True)
def _own_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)


def _cents(text: str) -> int:
    return int(Decimal(text) * 100)


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    folder = folder.resolve()
    return {
        str(path.relative_to(folder)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_a_backfill_materialises_each_month_as_a_partition_in_the_instance(warehouse):
    with warehouse_instance(warehouse) as instance:
        for key in (JOURNAL, FOCUS, STATEMENTS, COST_MARTS):
            assert instance.get_materialized_partitions(key) == {"2026-10", "2026-11"}
        runs = instance.get_runs(filters=dg.RunsFilter(job_name="monthly_deliverables_job"))
    assert sorted(run.tags["dagster/partition"] for run in runs) == ["2026-10", "2026-11"]
    assert monthly_partitions.get_first_partition_key() == f"{load_contract().first_month:%Y-%m}"
    assert monthly_partitions.get_last_partition_key() == f"{datetime.now(UTC):%Y-%m}"  # the open month


def test_the_partitions_are_known_without_the_dbt_manifest():
    """`cost-pipeline monthly` checks a month against the partitions before it prepares the manifest: their module
    imports nothing that reads it (the monthly assets' dependencies do)."""
    code = "import sys, cost_pipeline.defs.partitions; print(sorted(m for m in sys.modules if 'dbt' in m))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_partition_writes_the_months_files_with_the_marts_figures(warehouse):
    folder = month_folder(warehouse, NOVEMBER)
    with open(folder / "journal.csv", encoding="utf-8", newline="") as handle:
        journal = list(csv.DictReader(handle))
    ((debit, credit, lines),) = query(
        warehouse, "select sum(debit), sum(credit), count(*) from marts.fct_gl_journal where month = ?", [NOVEMBER]
    )
    assert len(journal) == lines > 0 and {row["month"] for row in journal} == {"2026-11-01"}
    assert sum(_cents(row["debit"]) for row in journal) == _cents(debit) > 0
    assert sum(_cents(row["credit"]) for row in journal) == _cents(credit) == _cents(debit)

    with open(folder / "focus.csv", encoding="utf-8", newline="") as handle:
        focus = list(csv.DictReader(handle))
    ((billed, rows),) = query(
        warehouse, "select sum(resource_cost), count(*) from marts.fct_resource_book where month = ?", [NOVEMBER]
    )
    assert len(focus) == rows > 0 and sum(_cents(row["BilledCost"]) for row in focus) == _cents(billed)

    teams = query(
        warehouse,
        "select b.team, sum(l.amount) from marts.fct_cost_lines as l join marts.dim_batches as b using (batch_id) "
        "where l.month = ? and b.team is not null group by b.team order by 1",
        [NOVEMBER],
    )
    assert sorted(p.name for p in (folder / "statements").iterdir()) == [f"{team}.html" for team, _ in teams]
    for team, amount in teams:
        page = (folder / "statements" / f"{team}.html").read_text(encoding="utf-8")
        assert f"team {team}, 2026-11" in page and f'data-value="{amount}"' in page

    with warehouse_instance(warehouse) as instance:
        event = instance.get_latest_materialization_event(JOURNAL)
        statements = instance.get_latest_materialization_event(STATEMENTS).asset_materialization.metadata
    metadata = event.asset_materialization.metadata
    assert event.asset_materialization.partition == "2026-11"
    assert (metadata["lines"].value, metadata["debit_cents"].value) == (lines, _cents(debit))
    assert metadata["path"].value == str(folder / "journal.csv") and metadata["closed"].value is False
    assert statements["total_cents"].value == {team: _cents(amount) for team, amount in teams}

    # A month without cost has the files' headers and no statement.
    october = month_folder(warehouse, OCTOBER)
    assert (october / "journal.csv").read_text(encoding="utf-8").count("\n") == 1
    assert not list((october / "statements").iterdir())


def test_a_partition_writes_the_months_rows_of_every_month_keyed_mart(warehouse, demo_run):
    published = last_good_night(warehouse)
    with duckdb_session.connect(str(demo_run.warehouse.with_name("warehouse.finance.duckdb")), read_only=True) as fin:
        assert fin.execute("select as_of from published").fetchall() == [(published,)]
    con = duckdb_session.connect(str(warehouse), read_only=True)
    try:
        marts = month_marts(con)
        # The asset depends on the marts it writes: the yml's month columns are the warehouse's.
        assert [["marts", table] for table in marts] == month_keyed_marts()
        assert {"fct_cost_lines", "fct_gl_journal", "fct_resource_book", "fct_service_month"} <= set(marts)
        rows = {}
        for month in (NOVEMBER, OCTOBER):
            folder = month_folder(warehouse, month) / "marts"
            assert sorted(path.name for path in folder.iterdir()) == [f"{table}.parquet" for table in marts]
            for table in marts:
                written = str(folder / f"{table}.parquet")
                expected = con.execute(f"select * from marts.{table} where month = ? order by all", [month]).fetchall()
                got = con.execute("select * exclude (as_of) from read_parquet(?)", [written]).fetchall()
                assert got == expected, table
                # Every row says which night's marts it is: the night that published them.
                stamped = con.execute("select distinct as_of from read_parquet(?)", [written]).fetchall()
                assert stamped == ([(published,)] if expected else []), table
                ((kv,),) = con.execute(
                    "select decode(value) from parquet_kv_metadata(?) where decode(key) = 'as_of'", [written]
                ).fetchall()
                assert datetime.fromisoformat(kv) == published
                rows[month, table] = len(expected)
            ((described,),) = con.execute(
                "select count(*) from parquet_kv_metadata(?) where decode(key) = 'description.amount'",
                [str(folder / "fct_cost_lines.parquet")],
            ).fetchall()
            assert described == 1
        ((lines, amount),) = con.execute(
            "select count(*), sum(amount) from read_parquet(?)",
            [str(month_folder(warehouse, NOVEMBER) / "marts" / "fct_cost_lines.parquet")],
        ).fetchall()
        assert (lines, amount) == con.execute(
            "select count(*), sum(amount) from marts.fct_cost_lines where month = ?", [NOVEMBER]
        ).fetchone()
        assert lines > 0 and amount > 0
    finally:
        con.close()
    # The month before the demo's has no cost line, but the cash book pays a purchase in it.
    assert rows[OCTOBER, "fct_cost_lines"] == 0 and rows[OCTOBER, "fct_cash_book"] == 1
    with warehouse_instance(warehouse) as instance:
        event = instance.get_latest_materialization_event(COST_MARTS).asset_materialization
    assert event.partition == "2026-11"
    assert event.metadata["rows"].value == {table: rows[NOVEMBER, table] for table in marts}
    assert event.metadata["dagster/row_count"].value == sum(rows[NOVEMBER, table] for table in marts)


def test_rematerialising_one_month_leaves_the_other_months_files_untouched(warehouse):
    november, october = month_folder(warehouse, NOVEMBER), month_folder(warehouse, OCTOBER)
    before, written = _files(november), november.resolve()
    october_before = october.resolve()
    assert [ok for _, ok, _ in run_months(warehouse, ["2026-10"])] == [True]
    assert _files(november) == before and november.resolve() == written  # bytes and modification times
    assert october.resolve() != october_before and not october_before.exists()  # swapped in whole, the old removed
    assert [p.name for p in november.parent.iterdir() if not p.name.startswith(".")] == sorted(["2026-10", "2026-11"])


def test_the_month_after_night_requests_the_open_month_and_the_previous_one_until_it_is_closed(
    demo_run, tmp_path, monkeypatch
):
    copied = _copy(demo_run, tmp_path / "night")
    monkeypatch.setenv("COST_WAREHOUSE", str(copied))
    with warehouse_instance(copied) as instance:
        (night,) = instance.get_runs(filters=dg.RunsFilter(job_name="nightly_cost_refresh_job"), limit=1)
        (success,) = instance.all_logs(night.run_id, of_type=dg.DagsterEventType.RUN_SUCCESS)
        ended = datetime.fromtimestamp(instance.get_run_record_by_id(night.run_id).end_time, UTC).date()

        def requested() -> list[tuple[str, str]]:
            with dg.build_run_status_sensor_context(
                sensor_name=monthly_after_nightly.name,
                dagster_event=success.dagster_event,
                dagster_instance=instance,
                dagster_run=night,
            ) as context:
                return [(r.partition_key, r.run_key) for r in monthly_after_nightly(context)]

        open_month = ended.replace(day=1)
        keys = [f"{m:%Y-%m}" for m in (previous_month(open_month), open_month)]
        assert requested() == [(key, f"{night.run_id}:{key}") for key in keys]

        con = duckdb_session.connect(str(copied))
        try:  # close every month up to the previous one, in order
            month = load_contract().first_month
            while month <= previous_month(open_month):
                close_month(con, month, by="test")
                month = next_month(month)
        finally:
            con.close()
        assert requested() == [(keys[1], f"{night.run_id}:{keys[1]}")]
    assert monthly_after_nightly.job_name == "monthly_deliverables_job"


def test_the_months_to_refresh_follow_the_close(demo_run, tmp_path):
    copied = _copy(demo_run, tmp_path / "night")
    assert months_to_refresh(copied, date(2026, 12, 2)) == ["2026-11", "2026-12"]
    assert months_to_refresh(copied, date(2026, 10, 31)) == ["2026-10"]  # no partition before the first month
    con = duckdb.connect(str(copied))
    try:
        close_month(con, OCTOBER, by="test")
        close_month(con, NOVEMBER, by="test")
    finally:
        con.close()
    assert months_to_refresh(copied, date(2026, 12, 2)) == ["2026-12"]
    assert months_to_refresh(copied, date(2027, 1, 1)) == ["2026-12", "2027-01"]


def test_a_closed_months_partition_writes_the_frozen_journal(demo_run, tmp_path, capsys):
    copied = _copy(demo_run, tmp_path / "night")
    con = duckdb.connect(str(copied))
    try:
        close_month(con, OCTOBER, by="test")
        frozen = close_month(con, NOVEMBER, by="test")
        # A later night that restates the month: the closed month's journal must not move.
        con.execute("update marts.fct_gl_journal set debit = debit + 1 where month = ? and debit > 0", [NOVEMBER])
    finally:
        con.close()
    assert main(["monthly", "--month", "2026-11", "--warehouse", str(copied)]) == 0
    assert "12 journal lines (closed: the frozen lines)".replace("12", str(len(frozen))) in capsys.readouterr().out
    with open(month_folder(copied, NOVEMBER) / "journal.csv", encoding="utf-8", newline="") as handle:
        posted = list(csv.DictReader(handle))
    assert sum(_cents(row["debit"]) for row in posted) == sum(int(line.debit * 100) for line in frozen)

    assert main(["monthly", "--month", "2026-09", "--warehouse", str(copied)]) == 2
    assert main(["monthly", "--from", "2026-11", "--warehouse", str(copied)]) == 2
