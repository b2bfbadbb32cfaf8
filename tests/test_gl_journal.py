"""The general-ledger journal (issue 11): balanced, equal to fct_batch_costs to the cent, with November 2026's lines
worked out by hand; a closed month never changes, and a restatement after close posts once, as adjustments in the
first open month naming the month it corrects. A cost whose amount is pending after close is held, not reversed;
a new contract version's cost centres map every posting made after it and leave the closed months as posted."""

from __future__ import annotations

import csv
import io
import logging
import shutil
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.cli import main, run_pipeline
from cost_pipeline.contract import add_contract_directory, remove_contract_directory
from cost_pipeline.dagster_home import warehouse_instance
from cost_pipeline.defs.monthly import JOURNAL
from cost_pipeline.journal import JournalLine, Posting, adjustment_lines, adjustments, held_note, legacy_adjustments
from cost_pipeline.monthly import month_folder
from tests.helpers import DEMO_FOCUS, demo_focus_line, nightly_assets_downstream_of, query

# Its module-scoped fixtures run once each: the whole module goes to one worker.
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
UNPRICED_STORAGE = [("CC-900", "6120"), ("CC-900", "2910")]
LATE_INVOICE = "EW-0043,EvalWorks,B-8,ongoing_support,250.00,USD,2026-11-28,\n"
# The raw assets of the invoices (the late invoice) and of the FOCUS export (retracted, then billed again).
INVOICES, BILL = ("raw", "service_invoices"), ("raw", "billing_focus")


def _night_after(landing: Path, warehouse: Path, changed: tuple[str, ...]) -> None:
    """The night after ``warehouse``'s whose ``changed`` source's files changed, or were retracted: its raw asset and
    every asset of the nightly job downstream of it (the cost lines, the batch costs and the journal among them);
    the rest reads nothing the change touches and stays as the night before built it."""
    keys = nightly_assets_downstream_of(
        [changed], covering=("marts/fct_cost_lines", "marts/fct_batch_costs", "marts/fct_gl_journal")
    )
    assert run_pipeline(landing, warehouse, asset_keys=list(keys.values()))


def _journal(capsys, warehouse: Path, month: str) -> tuple[int, list[dict[str, str]]]:
    capsys.readouterr()  # what came before
    code = main(["journal", "--month", month, "--warehouse", str(warehouse)])
    text = capsys.readouterr().out
    return code, list(csv.DictReader(io.StringIO(text))) if code == 0 else []


def _adjustments(capsys, warehouse: Path, month: str) -> tuple[list[tuple], str]:
    """The month's adjustment lines (corrects month, cost centre, account, role, debit, credit, unpriced lines and
    GPU-hours) and what ``journal`` wrote on stderr."""
    capsys.readouterr()  # what came before
    code = main(["journal", "--month", month, "--warehouse", str(warehouse)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    rows = list(csv.DictReader(io.StringIO(printed.out)))
    assert {r["line_type"] for r in rows} <= {"adjustment"}
    debits, credits = sum(Decimal(r["debit"]) for r in rows), sum(Decimal(r["credit"]) for r in rows)
    assert debits == credits
    keyed = [(r["corrects_month"], *_key(r), r["unpriced_lines"], r["unpriced_gpu_hours"]) for r in rows]
    return keyed, printed.err


def _key(row: dict[str, str]) -> tuple:
    return row["cost_centre"], row["gl_account"], row["account_role"], row["debit"], row["credit"]


def test_november_journal_is_balanced_and_sums_to_batch_costs(demo_run, capsys):
    assert demo_run.succeeded
    code, rows = _journal(capsys, demo_run.warehouse, "2026-11")
    assert code == 0
    assert [_key(r) for r in rows] == NOVEMBER
    assert {(r["month"], r["line_type"], r["corrects_month"], r["currency"]) for r in rows} == {
        ("2026-11-01", "regular", "", "USD")
    }
    # CC-900's storage holds ml-archive/tmp/unpriced.bin, in a class without a price: its lines are flagged (the
    # 27.83 of the priced objects posts; the unpriced object adds nothing, never 0.00 in silence).
    assert [_key(r)[:2] for r in rows if r["is_unpriced"] == "true"] == UNPRICED_STORAGE
    debits, credits = sum(Decimal(r["debit"]) for r in rows), sum(Decimal(r["credit"]) for r in rows)
    assert debits == credits == Decimal("11023.53")
    # The unattributed batch's total is null (unpriced): the other batches' totals are the rest, 11,023.53 - 241.65.
    (total,) = demo_run.query("select sum(total_cost) from marts.fct_batch_costs")[0]
    assert total == Decimal("10781.88")
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
    _night_after(landing, warehouse, INVOICES)
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


# December's adjustments after the retraction, and the held note, by who closed November. By hand, per batch: CC-410
# compute holds B-10's 96.00 (0.00 posted, flagged: 1 line, 32 GPU-h); storage -12.00 with its clearing +12.00;
# CC-900 compute -34.00 with its clearing +34.00. An earlier release's close (no raw.closed_postings) is compared per
# cost centre and account: CC-410 has an unpriced line, so its whole difference (-96.00 - 12.00) is held (its lines
# balance per cost centre) and only its unpriced lines show, at 0.00.
PENDING = {
    "per_batch": (
        [
            ("2026-11-01", "CC-410", "6110", "expense", "0.00", "0.00", "1", "32.0000"),
            ("2026-11-01", "CC-410", "6120", "expense", "0.00", "12.00", "0", "0.0000"),
            ("2026-11-01", "CC-410", "2910", "balancing", "12.00", "0.00", "1", "32.0000"),
        ],
        "B-10's compute on CC-410 6110 differs by -96.00",
    ),
    "earlier_release": (
        [
            ("2026-11-01", "CC-410", "6110", "expense", "0.00", "0.00", "1", "32.0000"),
            ("2026-11-01", "CC-410", "2910", "balancing", "0.00", "0.00", "1", "32.0000"),
        ],
        "every batch's cost on CC-410's expense accounts differs by -108.00",
    ),
}
CC_900_ADJUSTED = [
    ("2026-11-01", "CC-900", "6110", "expense", "0.00", "34.00", "0", "0.0000"),
    ("2026-11-01", "CC-900", "2910", "balancing", "34.00", "0.00", "0", "0.0000"),
]
CC_900_HELD = [("2026-11-01", "CC-900", "2910", "balancing", "0.00", "0.00", "1", "0.0000")]


@dataclass(frozen=True)
class Pending:
    held: Path  # the warehouse after the night that followed the retraction
    billed: Path  # the warehouse after the night that followed the new export


def _copy(warehouse: Path, folder: Path) -> Path:
    """A copy of ``warehouse`` and its Dagster home in the new ``folder``."""
    folder.mkdir()
    shutil.copyfile(warehouse, folder / warehouse.name)
    shutil.copytree(warehouse.with_name(f"{warehouse.stem}.dagster"), folder / f"{warehouse.stem}.dagster")
    return folder / warehouse.name


@pytest.fixture(scope="module")
def pending(demo_run, tmp_path_factory) -> Pending:
    """November closed on the demo night (by the controller), AWS's FOCUS file retracted, and a night; then a new
    export billing B-10's cloud job 120.00, and another night. Each state is kept as a copy for both parameters of
    test_a_cost_pending_after_close_...: a night reads none of what ``close`` keeps (only ``journal``, ``close`` and
    ``monthly`` do), so the earlier release's warehouse is the same nights' with raw.closed_postings dropped."""
    root = demo_run.copy_to(tmp_path_factory.mktemp("pending") / "demo")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    assert main(["close", "--month", "2026-11", "--warehouse", str(warehouse), "--by", "controller"]) == 0
    assert main(["retract", str(DEMO_FOCUS), "--reason", "restated", "--warehouse", str(warehouse)]) == 0
    _night_after(landing, warehouse, BILL)
    held = _copy(warehouse, root / "held")
    header = (landing / DEMO_FOCUS).read_text(encoding="utf-8").splitlines()[0]
    export = landing / "billing" / "aws_focus_2026-11-restated.csv"
    export.write_text(f"{header}\n{demo_focus_line(landing, amount='120.00')}\n", encoding="utf-8")
    _night_after(landing, warehouse, BILL)
    return Pending(held, _copy(warehouse, root / "billed"))


def _closed_by(pending: Path, folder: Path, closed_by: str) -> Path:
    """A copy of the ``pending`` warehouse in ``folder``, as ``closed_by`` closed November: an earlier release kept
    no raw.closed_postings."""
    warehouse = _copy(pending, folder)
    if closed_by == "earlier_release":
        with duckdb.connect(str(warehouse)) as con:
            con.execute("drop table raw.closed_postings")
    return warehouse


@pytest.mark.parametrize("closed_by", sorted(PENDING))
def test_a_cost_pending_after_close_is_held_not_reversed_until_its_amount_is_known(
    pending, tmp_path, capsys, closed_by
):
    """November closed with B-10's cloud job billed (96.00: 102.40 less a 6.40 correction). Then AWS's FOCUS file is
    retracted: the job is pending again (its 32 GPU-hours, no amount). An unknown amount is not 0.00, so December
    must not reverse the 96.00; only what is known moves (the file's B-10 volume, 12.00, and its two unattributed
    lines, 29.00 + 5.00). A new export bills the job 120.00: then December adjusts by the known difference, 24.00.
    A warehouse an earlier release closed (it has no raw.closed_postings: dropped here after the close, from copies
    of what each night left) is not refused: its month adjusts per cost centre and account, as then, and ends with
    the same lines. December's monthly partition (`cost-pipeline monthly`, as the UI or the sensor would run it)
    writes the same held lines and says the same note: on stderr, as a warning of its Dagster run and in the journal
    asset's `held` metadata. Both parameters read the same two nights (the `pending` fixture)."""
    warehouse = _closed_by(pending.held, tmp_path / "held", closed_by)
    assert query(
        warehouse,
        "select evidence_level, amount, gpu_hours from marts.fct_cost_lines where batch_id = 'B-10' "
        "and cost_type = 'compute'",
    ) == [("pending", None, Decimal("32.0000"))]
    december, err = _adjustments(capsys, warehouse, "2026-12")
    held_lines, held = PENDING[closed_by]
    # Per cost centre (an earlier release's close), CC-900 has an unpriced line too (its storage holds an object in a
    # class without a price): its -34.00 is held as well, and only its unpriced line shows, at 0.00.
    cc_900 = CC_900_ADJUSTED if closed_by == "per_batch" else CC_900_HELD
    assert december == held_lines + cc_900
    whose = "its" if closed_by == "per_batch" else "CC-410's"  # the batch's cost type, or its whole cost centre
    assert err.splitlines() == [
        f"cost-pipeline: held for 2026-11: {held} from what was posted, but is not adjusted: 1 of {whose} cost lines "
        "(32.0000 GPU-h) have no amount yet",
        *(
            []
            if closed_by == "per_batch"
            else [
                "cost-pipeline: held for 2026-11: every batch's cost on CC-900's expense accounts differs by -34.00 "
                "from what was posted, but is not adjusted: 1 of CC-900's cost lines (0.0000 GPU-h) have no amount yet"
            ]
        ),
    ]
    note = err.splitlines()[0].removeprefix("cost-pipeline: ")
    assert main(["monthly", "--month", "2026-12", "--warehouse", str(warehouse)]) == 0
    assert capsys.readouterr().err == err
    with open(month_folder(warehouse, date(2026, 12, 1)) / "journal.csv", encoding="utf-8", newline="") as handle:
        written = [
            (r["corrects_month"], *_key(r), r["unpriced_lines"], r["unpriced_gpu_hours"])
            for r in csv.DictReader(handle)
        ]
    assert written == held_lines + cc_900
    with warehouse_instance(warehouse) as instance:
        event = instance.get_latest_materialization_event(JOURNAL)
        warnings = [entry.user_message for entry in instance.all_logs(event.run_id) if entry.level == logging.WARNING]
    assert event.asset_materialization.partition == "2026-12"
    notes = [line.removeprefix("cost-pipeline: ") for line in err.splitlines()]
    assert event.asset_materialization.metadata["held"].value == notes
    assert warnings.count(note) == 1

    warehouse = _closed_by(pending.billed, tmp_path / "billed", closed_by)
    december, err = _adjustments(capsys, warehouse, "2026-12")
    # By hand: compute 120.00 - 96.00 posted = +24.00; the clearing account nets -24.00 + 12.00 = 12.00 credit.
    assert december == [
        ("2026-11-01", "CC-410", "6110", "expense", "24.00", "0.00", "0", "0.0000"),
        ("2026-11-01", "CC-410", "6120", "expense", "0.00", "12.00", "0", "0.0000"),
        ("2026-11-01", "CC-410", "2910", "balancing", "0.00", "12.00", "0", "0.0000"),
        *cc_900,
    ]
    assert err == ("" if closed_by == "per_batch" else f"cost-pipeline: {notes[1]}\n")
    # Closing December freezes its adjustments once: January has none.
    assert main(["close", "--month", "2026-12", "--warehouse", str(warehouse), "--by", "controller"]) == 0
    january = _adjustments(capsys, warehouse, "2027-01")
    if closed_by == "per_batch":
        assert january == ([], "")
    else:  # per cost centre CC-900's -34.00 stays held while its storage holds an unpriced object
        assert january[0] == CC_900_HELD and "CC-900's expense accounts differs by -34.00" in january[1]


def test_a_new_contracts_cost_centre_maps_postings_after_it_and_leaves_closed_months_as_posted(
    demo_copy, tmp_path, capsys
):
    """Contract v2 moves team post-training from CC-410 to CC-420; B-7, B-8 and B-10 stay registered under v1.
    November was closed under v1. Tonight's figures post under v2 (the mart's November is CC-420's), but the closed
    November is not rewritten: no reclassification is posted. A late B-8 invoice (250.00) corrects B-8's November
    services where they were posted (CC-410); B-10's first services cost (100.00), never posted, goes to CC-420."""
    landing, warehouse = demo_copy / "landing", demo_copy / "warehouse.duckdb"
    assert main(["close", "--month", "2026-11", "--warehouse", str(warehouse), "--by", "controller"]) == 0
    capsys.readouterr()
    v1 = (Path(__file__).parents[1] / "cost_pipeline" / "contract" / "definitions_v1.yaml").read_text(encoding="utf-8")
    v2 = v1.replace("version: v1", "version: v2", 1).replace(
        "      post-training: CC-410\n", "      post-training: CC-420\n"
    )
    assert v2.count("CC-420") == 1
    contracts = tmp_path / "contracts"
    contracts.mkdir()
    (contracts / "definitions_v2.yaml").write_text(v2, encoding="utf-8")
    invoices = landing / "services" / "invoices_2026-11.csv"
    header = invoices.read_text(encoding="utf-8").splitlines()[0]
    late = f"{header}\n{LATE_INVOICE}EW-0044,EvalWorks,B-10,initial_delivery,100.00,USD,2026-11-29,\n"
    (landing / "services" / "invoices_2026-11-late.csv").write_text(late, encoding="utf-8")
    add_contract_directory(contracts)
    try:
        assert run_pipeline(landing, warehouse)
        code, november = _journal(capsys, warehouse, "2026-11")
        december, err = _adjustments(capsys, warehouse, "2026-12")
    finally:
        remove_contract_directory(contracts)
    assert query(warehouse, "select batch_id, contract_version from marts.dim_batches order by 1") == [
        ("B-10", "v1"), ("B-7", "v1"), ("B-8", "v1"), ("unattributed", "v2")
    ]  # fmt: skip
    # Tonight's November, by hand: the demo's lines with post-training's on CC-420 and services 4,500.00 + 250.00 +
    # 100.00 = 4,850.00.
    mart = query(
        warehouse,
        "select cost_centre, gl_account, account_role, cast(debit as varchar), cast(credit as varchar) "
        "from marts.fct_gl_journal where month = date '2026-11-01' "
        "order by cost_centre, account_role <> 'expense', gl_account",
    )
    moved = [("CC-420", *line[1:]) if line[0] == "CC-410" else line for line in NOVEMBER]
    services = {("6140", "expense"): ("4850.00", "0.00"), ("2150", "balancing"): ("0.00", "4850.00")}
    assert mart == [(*line[:3], *services.get(line[1:3], line[3:])) for line in moved]
    # The closed November stays as posted, and December posts only the two invoices, no reclassification.
    assert code == 0 and [_key(r) for r in november] == NOVEMBER
    assert december == [
        ("2026-11-01", "CC-410", "6140", "expense", "250.00", "0.00", "0", "0.0000"),
        ("2026-11-01", "CC-410", "2150", "balancing", "0.00", "250.00", "0", "0.0000"),
        ("2026-11-01", "CC-420", "6140", "expense", "100.00", "0.00", "0", "0.0000"),
        ("2026-11-01", "CC-420", "2150", "balancing", "0.00", "100.00", "0", "0.0000"),
    ]
    assert err == ""


def _posting(month: date, batch: str, cost_type: str, centre: str, amount: str, unpriced: int = 0) -> Posting:
    accounts = {"compute": ("6110", "2910"), "storage": ("6120", "2910")}[cost_type]
    return Posting(
        month, None, batch, cost_type, centre, accounts[0], None, accounts[1], None, Decimal(amount), unpriced,
        Decimal("32.0000") if unpriced else Decimal("0.0000"), "USD",
    )  # fmt: skip


def test_a_cost_gone_from_the_figures_is_reversed_where_it_was_posted():
    """Posted for November: B-10's compute 96.00 and B-7's storage 50.00, both on CC-410. Tonight B-10's job is gone
    (no cost line at all: known, so reversed) and B-7's storage is 55.00, mapped to CC-420 by a newer contract: its
    +5.00 corrects the posting on CC-410. A pending B-8 compute line (posted 40.00) is held."""
    november, december = date(2026, 11, 1), date(2026, 12, 1)
    posted = [
        _posting(november, "B-10", "compute", "CC-410", "96.00"),
        _posting(november, "B-7", "storage", "CC-410", "50.00"),
        _posting(november, "B-8", "compute", "CC-410", "40.00"),
    ]
    current = [
        _posting(november, "B-7", "storage", "CC-420", "55.00"),
        _posting(november, "B-8", "compute", "CC-420", "0.00", unpriced=1),
    ]
    adjusting, held = adjustments(current, posted, into=december)
    assert [(p.batch_id, p.cost_centre, p.amount, p.month, p.corrects_month) for p in adjusting] == [
        ("B-10", "CC-410", Decimal("-96.00"), december, november),
        ("B-7", "CC-410", Decimal("5.00"), december, november),
    ]
    assert [(p.batch_id, p.cost_centre, p.amount, p.unpriced_lines) for p in held] == [
        ("B-8", "CC-410", Decimal("-40.00"), 1)
    ]
    lines = adjustment_lines(adjusting, held)
    # By hand: CC-410 compute -96.00 (B-8's held 40.00 not in it, flagged), storage +5.00, clearing 2910 +91.00.
    assert sorted((x.cost_centre, x.gl_account, x.debit, x.credit, x.unpriced_lines) for x in lines) == [
        ("CC-410", "2910", Decimal("91.00"), Decimal("0.00"), 1),
        ("CC-410", "6110", Decimal("0.00"), Decimal("96.00"), 1),
        ("CC-410", "6120", Decimal("5.00"), Decimal("0.00"), 0),
    ]


def test_a_cost_centre_held_whole_is_named_with_its_own_unpriced_lines():
    """A month an earlier release closed is held per cost centre: CC-900's compute moved by -34.00 and its storage
    has a line without an amount (an object in a class without a price). The note named the compute account's
    unpriced lines, "0 of its cost lines have no amount yet", while one of CC-900's lines holds it: it counts and
    names the cost centre's."""
    november, december = date(2026, 11, 1), date(2026, 12, 1)

    def line(account: str, role: str, debit: str, credit: str, unpriced: int = 0) -> JournalLine:
        return JournalLine(
            november, "regular", None, "CC-900", account, None, role, Decimal(debit), Decimal(credit), "USD",
            unpriced > 0, unpriced, Decimal("0.0000"),
        )  # fmt: skip

    frozen = [line("6110", "expense", "34.00", "0.00"), line("2910", "balancing", "0.00", "34.00")]
    current = [line("6120", "expense", "0.00", "0.00", 1), line("2910", "balancing", "0.00", "0.00", 1)]
    _, held = legacy_adjustments(current, frozen, december)
    assert [held_note(posting) for posting in held] == [
        "held for 2026-11: every batch's cost on CC-900's expense accounts differs by -34.00 from what was posted, "
        "but is not adjusted: 1 of CC-900's cost lines (0.0000 GPU-h) have no amount yet"
    ]
