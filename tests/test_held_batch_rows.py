"""A training step, a batch's trial round and a service accrual that pass the contract and fail a staging dbt test are
held as a request is (issue 10): the night builds every mart without them, and its figures are those of a night whose
contract had quarantined the same three lines at ingest. Only their own batch's figures move, and the accrual's
month's cash.

Both nights start from copies of the session's demo night. The held night changes three raw rows behind the
contract's back (the landing files are unchanged, so the night keeps its raw rows and dbt sees the bad values). The
quarantined night writes the same values into the landing files, where the contract refuses them.
"""

from __future__ import annotations

import shutil
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.cli import HELD_EXIT
from tests.helpers import Night, partial_night, query

pytestmark = pytest.mark.xdist_group("held_batch_rows")

STEPS_FILE, STEP_LINE = "steps/steps.jsonl", 33  # batch B-7, job 1003: its last step
ROUNDS_FILE, ROUND_LINE = "registry/rounds.csv", 3  # batch B-7's second and last round
INVOICES_FILE, INVOICE_LINE = "services/invoices_2026-11.csv", 3  # batch B-7's accrual LC-ACCR-2026-11, 600.00
STEP_TEST = "in_contract_enumeration_stg_steps__training_steps_discarded_reason__discard_reason"
ROUND_TEST = (
    "not_null_columns_stg_registry__rounds_batch_id__round_number__started_at__ended_at__source_file__source_line"
)
INVOICE_TEST = "in_contract_enumeration_stg_services__invoices_stage__service_stage"
# The raw assets of the three lines' sources: the steps, the rounds and the invoices.
SOURCES = (("raw", "training_steps"), ("raw", "batch_rounds"), ("raw", "service_invoices"))


def _copy(demo_run, root: Path) -> tuple[Path, Path]:
    assert demo_run.succeeded
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    shutil.copy2(demo_run.warehouse, warehouse)
    return landing, warehouse


def _night_after(landing: Path, warehouse: Path, tamper: tuple[str, ...] = ()) -> Night:
    """The night after the demo's on a copy of it, after the ``tamper`` statements, as ``cost-pipeline run`` prints it
    and exits (``partial_night``): the three lines' sources' raw assets and every asset of the nightly job downstream
    of them (their staging models and tests, every mart they feed, the history and publishing); the rest reads
    nothing the three lines touch and stays as the demo's night built it, in both nights alike."""
    return partial_night(
        landing,
        warehouse,
        SOURCES,
        tamper,
        covering=(
            "staging/stg_steps__training_steps",
            "staging/stg_registry__rounds",
            "staging/stg_services__invoices",
            "marts/fct_batch_costs",
            "marts/fct_cash_book",
            "marts/fct_gl_journal",
            "published/marts",
        ),
    )


@pytest.fixture(scope="module")
def held(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Night:
    landing, warehouse = _copy(demo_run, tmp_path_factory.mktemp("held"))
    return _night_after(
        landing,
        warehouse,
        (
            f"update raw.training_steps set discarded_reason = 'bogus' where source_line = {STEP_LINE}",
            f"update raw.batch_rounds set ended_at = null where source_line = {ROUND_LINE}",
            f"update raw.service_invoices set stage = 'bogus' where source_file = '{INVOICES_FILE}' "
            f"and source_line = {INVOICE_LINE}",
        ),
    )


def _edit_line(path: Path, number: int, old: str, new: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[number - 1].count(old) == 1, lines[number - 1]
    lines[number - 1] = lines[number - 1].replace(old, new)
    path.write_text("".join(lines), encoding="utf-8")


@pytest.fixture(scope="module")
def quarantined(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Night:
    landing, warehouse = _copy(demo_run, tmp_path_factory.mktemp("quarantined"))
    _edit_line(landing / STEPS_FILE, STEP_LINE, '"discarded_reason": null', '"discarded_reason": "bogus"')
    _edit_line(landing / ROUNDS_FILE, ROUND_LINE, ",2026-11-05T00:00:00,", ",,")
    _edit_line(landing / INVOICES_FILE, INVOICE_LINE, ",ongoing_support,", ",bogus,")
    return _night_after(landing, warehouse)


def _ledger(warehouse: Path, source_file: str) -> tuple:
    (row,) = query(
        warehouse,
        "select rows_in, rows_staged, rows_quarantined from raw.ingested_files where source_file = ?",
        [source_file],
    )
    return row


def test_a_step_a_round_and_an_accrual_that_fail_staging_tests_are_held(demo_run, held):
    assert held.code == HELD_EXIT, held.err
    for source, test, file, line in (
        ("batch_rounds", ROUND_TEST, ROUNDS_FILE, ROUND_LINE),
        ("service_invoices", INVOICE_TEST, INVOICES_FILE, INVOICE_LINE),
        ("training_steps", STEP_TEST, STEPS_FILE, STEP_LINE),
    ):
        assert (
            f"  held: 1 row(s) of {source} passed the contract and failed dbt test {test} (first: {file} line "
            f"{line}); quarantined, left out of the marts built tonight" in held.out
        )
        rows_in, staged, quarantined = _ledger(demo_run.warehouse, file)
        assert _ledger(held.warehouse, file) == (rows_in, staged - 1, quarantined + 1)
    assert query(
        held.warehouse,
        "select source, source_file, line, rule from raw.quarantine where starts_with(rule, 'dbt:') order by source",
    ) == [
        ("batch_rounds", ROUNDS_FILE, ROUND_LINE, f"dbt:{ROUND_TEST}"),
        ("service_invoices", INVOICES_FILE, INVOICE_LINE, f"dbt:{INVOICE_TEST}"),
        ("training_steps", STEPS_FILE, STEP_LINE, f"dbt:{STEP_TEST}"),
    ]


def _marts(warehouse: Path, *leave_out: str) -> dict[str, list[tuple]]:
    """Every table of the warehouse's marts schema, its rows sorted, without the night's as_of and ``leave_out``."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = [
            name
            for (name,) in con.execute(
                "select table_name from information_schema.tables where table_schema = 'marts' order by 1"
            ).fetchall()
        ]
        marts = {}
        for table in tables:
            described = con.execute(f'describe marts."{table}"').fetchall()
            columns = [name for name, *_ in described if name not in ("as_of", *leave_out)]
            rows = con.execute(f'select {", ".join(columns)} from marts."{table}"').fetchall()
            marts[table] = sorted(rows, key=repr)
    return marts


def test_the_held_nights_figures_are_those_of_the_lines_quarantined_at_ingest(held, quarantined):
    """A held row is left out as if the contract had quarantined it: every mart equals, row for row, the marts of
    a night whose landing files carried the same values, refused at ingest."""
    assert quarantined.code == 0, quarantined.err
    assert query(quarantined.warehouse, "select source, line from raw.quarantine order by source, line") == [
        ("batch_rounds", ROUND_LINE),
        ("scheduler_jobs", 27),  # the demo's own refused sacct line
        ("service_invoices", INVOICE_LINE),
        ("training_steps", STEP_LINE),
    ]
    # The history's inputs_hash covers the landing files' bytes, which differ: the held night's files are the demo's.
    held_marts, quarantined_marts = _marts(held.warehouse, "inputs_hash"), _marts(quarantined.warehouse, "inputs_hash")
    assert held_marts.keys() == quarantined_marts.keys()
    for table, rows in held_marts.items():
        assert rows == quarantined_marts[table], table


def test_only_the_held_rows_batch_s_figures_move(demo_run, held):
    """The step, the round and the accrual are batch B-7's: every other batch's rows, in every mart with a batch, are
    the demo's, and so is every mart without one (the service book, the serving marts) but the accrual's month's cash
    book and journal. By hand: B-7 ran and counted one step (1,000,000 tokens) fewer, has one round (the first)
    instead of two, and costs the 600.00 accrual less (a step held moves its job's split, not its cost): services
    3,000.00 -> 2,400.00, its range 480.00-720.00 with it; November's cash book loses its pending external-service
    line and the journal 600.00 of services expense, balanced."""
    before, after = _marts(demo_run.warehouse), _marts(held.warehouse)
    with duckdb.connect(str(held.warehouse), read_only=True) as con:
        by_batch = {
            table
            for (table,) in con.execute(
                "select table_name from information_schema.columns where table_schema = 'marts' "
                "and column_name = 'batch_id'"
            ).fetchall()
        }
    assert {"fct_batch_costs", "fct_batch_compute", "fct_cost_lines", "fct_resource_book"} <= by_batch
    assert {"fct_cash_book", "fct_gl_journal", "fct_service_month"} <= after.keys() - by_batch
    for table in after:
        if table in ("fct_cash_book", "fct_gl_journal"):
            continue
        if table not in by_batch:
            assert before[table] == after[table], table
            continue
        columns = [row[0] for row in query(held.warehouse, f'describe marts."{table}"') if row[0] != "as_of"]
        batch = columns.index("batch_id")
        others = [[row for row in rows[table] if row[batch] != "B-7"] for rows in (before, after)]
        assert others[0] == others[1], table
    costs = (
        "select services_cost, total_cost, total_cost_low, total_cost_high from marts.fct_batch_costs "
        "where batch_id = 'B-7'"
    )
    (services, total, low, high) = query(demo_run.warehouse, costs)[0]
    assert services == Decimal("3000.00")
    assert query(held.warehouse, costs) == [(services - 600, total - 600, low - 480, high - 720)]
    compute = "select steps_run, steps_counted, tokens_counted from marts.fct_batch_compute where batch_id = 'B-7'"
    (run, counted, tokens) = query(demo_run.warehouse, compute)[0]
    assert query(held.warehouse, compute) == [(run - 1, counted - 1, tokens - 1_000_000)]
    rounds = "select rounds_run from marts.fct_batch_budget where batch_id = 'B-7'"
    assert query(demo_run.warehouse, rounds) == [(2,)] and query(held.warehouse, rounds) == [(1,)]
    cash = "select month, item, evidence_level, amount, lines from marts.fct_cash_book order by all"
    accrual = (date(2026, 11, 1), "external_service", "pending", Decimal("600.00"), 1)
    assert accrual in query(demo_run.warehouse, cash)
    assert query(held.warehouse, cash) == [row for row in query(demo_run.warehouse, cash) if row != accrual]
    journal = "select sum(debit), sum(credit) from marts.fct_gl_journal"
    (debit, credit) = query(demo_run.warehouse, journal)[0]
    assert query(held.warehouse, journal) == [(debit - 600, credit - 600)]
