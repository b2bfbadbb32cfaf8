"""The general-ledger journal (issue 11): balanced, equal to fct_batch_costs to the cent, with November 2026's lines
worked out by hand; a closed month never changes, and a restatement after close posts once, as adjustments in the
first open month naming the month it corrects."""

from __future__ import annotations

import csv
import io
import shutil
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.cli import main, run_pipeline
from tests.helpers import query

# Its module-scoped fixture runs once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("gl_journal")

# cost centre, account, role, debit, credit. CC-410 is team post-training (B-7, B-8, B-10), CC-900 the fallback
# (unattributed). Compute: 96.00 + 465.77 + 426.13 (CC-410), 53.82 (CC-900); storage: 12.00 + 90.06 + 41.64,
# 13.34 + 14.49; labour: 4,230.28 + 920.00, 160.00; services: 3,000.00 + 1,500.00. Compute and storage share clearing
# account 2910.
NOVEMBER = [
    ("CC-410", "6110", "expense", "987.90", "0.00"),
    ("CC-410", "6120", "expense", "143.70", "0.00"),
    ("CC-410", "6130", "expense", "5150.28", "0.00"),
    ("CC-410", "6140", "expense", "4500.00", "0.00"),
    ("CC-410", "2150", "balancing", "0.00", "4500.00"),
    ("CC-410", "2910", "balancing", "0.00", "1131.60"),
    ("CC-410", "2920", "balancing", "0.00", "5150.28"),
    ("CC-900", "6110", "expense", "53.82", "0.00"),
    ("CC-900", "6120", "expense", "27.83", "0.00"),
    ("CC-900", "6130", "expense", "160.00", "0.00"),
    ("CC-900", "2910", "balancing", "0.00", "81.65"),
    ("CC-900", "2920", "balancing", "0.00", "160.00"),
]
LATE_INVOICE = "EW-0043,EvalWorks,B-8,ongoing_support,250.00,USD,2026-11-28,\n"


def _journal(capsys, warehouse: Path, month: str) -> tuple[int, list[dict[str, str]]]:
    code = main(["journal", "--month", month, "--warehouse", str(warehouse)])
    text = capsys.readouterr().out
    return code, list(csv.DictReader(io.StringIO(text))) if code == 0 else []


def _key(row: dict[str, str]) -> tuple:
    return row["cost_centre"], row["gl_account"], row["account_role"], row["debit"], row["credit"]


def test_november_journal_is_balanced_and_sums_to_batch_costs(demo_run, capsys):
    assert demo_run.succeeded
    code, rows = _journal(capsys, demo_run.warehouse, "2026-11")
    assert code == 0
    assert [_key(r) for r in rows] == NOVEMBER
    assert {(r["month"], r["line_type"], r["corrects_month"], r["currency"], r["is_unpriced"]) for r in rows} == {
        ("2026-11-01", "regular", "", "USD", "false")
    }
    debits, credits = sum(Decimal(r["debit"]) for r in rows), sum(Decimal(r["credit"]) for r in rows)
    assert debits == credits
    (total,) = demo_run.query("select sum(total_cost) from marts.fct_batch_costs")[0]
    assert debits == total == Decimal("11023.53")
    # The mart holds the same lines (the CLI adds nothing to an open month without closed months before it).
    mart = demo_run.query(
        "select cost_centre, gl_account, account_role, cast(debit as varchar), cast(credit as varchar) "
        "from marts.fct_gl_journal order by cost_centre, account_role <> 'expense', gl_account"
    )
    assert mart == NOVEMBER


def test_wrong_month_and_a_warehouse_without_journal_are_one_line(demo_run, tmp_path, capsys):
    assert main(["journal", "--month", "2026-13", "--warehouse", str(demo_run.warehouse)]) == 2
    assert "YYYY-MM" in capsys.readouterr().err
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    assert main(["close", "--month", "2026-11", "--warehouse", str(empty)]) == 9
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fct_gl_journal" in err
    assert main(["journal", "--month", "2026-11", "--warehouse", str(tmp_path / "absent.duckdb")]) == 5


@dataclass(frozen=True)
class Restated:
    warehouse: Path
    november_at_close: list[dict[str, str]]


@pytest.fixture(scope="module")
def restated(demo_run, tmp_path_factory) -> Restated:
    """November closed on the demo night, then a late EvalWorks invoice for B-8 in November (250.00) arrives and a
    second night runs: November's figures change after its close."""
    root = tmp_path_factory.mktemp("journal")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    shutil.copyfile(demo_run.warehouse, warehouse)
    assert main(["close", "--month", "2026-11", "--warehouse", str(warehouse), "--by", "controller"]) == 0
    at_close = root / "november_at_close.csv"
    assert main(["journal", "--month", "2026-11", "--warehouse", str(warehouse), "--out", str(at_close)]) == 0
    header = (landing / "services" / "invoices_2026-11.csv").read_text(encoding="utf-8").splitlines()[0]
    (landing / "services" / "invoices_2026-11-late.csv").write_text(f"{header}\n{LATE_INVOICE}", encoding="utf-8")
    assert run_pipeline(landing, warehouse)
    return Restated(warehouse, list(csv.DictReader(io.StringIO(at_close.read_text(encoding="utf-8")))))


def test_a_closed_month_never_changes_and_its_restatement_posts_in_the_first_open_month(restated, capsys):
    assert [_key(r) for r in restated.november_at_close] == NOVEMBER
    # The figures did change: tonight's mart has B-8's late invoice in November.
    (services,) = query(
        restated.warehouse,
        "select debit from marts.fct_gl_journal where month = date '2026-11-01' and cost_centre = 'CC-410' "
        "and gl_account = '6140'",
    )[0]
    assert services == Decimal("4750.00")
    code, november = _journal(capsys, restated.warehouse, "2026-11")
    assert code == 0 and november == restated.november_at_close
    code, december = _journal(capsys, restated.warehouse, "2026-12")
    assert code == 0
    assert [(r["month"], r["line_type"], r["corrects_month"], *_key(r)) for r in december] == [
        ("2026-12-01", "adjustment", "2026-11-01", "CC-410", "6140", "expense", "250.00", "0.00"),
        ("2026-12-01", "adjustment", "2026-11-01", "CC-410", "2150", "balancing", "0.00", "250.00"),
    ]


def test_closing_freezes_adjustments_once_and_refuses_a_closed_month(restated, tmp_path, capsys):
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(restated.warehouse, warehouse)
    assert main(["close", "--month", "2026-11", "--warehouse", str(warehouse)]) == 9
    assert "closed already" in capsys.readouterr().err
    assert main(["close", "--month", "2027-01", "--warehouse", str(warehouse)]) == 9  # December holds adjustments
    assert "close 2026-12 first" in capsys.readouterr().err
    _, december = _journal(capsys, warehouse, "2026-12")
    assert main(["close", "--month", "2026-12", "--warehouse", str(warehouse)]) == 0
    assert "2 journal lines frozen" in capsys.readouterr().out
    assert _journal(capsys, warehouse, "2026-12")[1] == december
    out = tmp_path / "january.csv"
    assert main(["journal", "--month", "2027-01", "--warehouse", str(warehouse), "--out", str(out)]) == 0
    assert "0 journal lines for 2027-01 (open)" in capsys.readouterr().out
    assert out.read_text(encoding="utf-8").splitlines() == [
        "month,line_type,corrects_month,cost_centre,gl_account,account_name,account_role,debit,credit,currency,"
        "is_unpriced,unpriced_lines,unpriced_gpu_hours"
    ]
    closes = query(warehouse, "select strftime(month, '%Y-%m'), lines from raw.closed_months order by month")
    assert closes == [("2026-11", 12), ("2026-12", 2)]
