"""A month's deliverables as files: the folder ``<warehouse stem>.monthly/<YYYY-MM>/`` beside the warehouse.

One job: write one month's folder from the warehouse, with the functions the CLI commands use, so each of the first
three is byte for byte what its command writes for the month:

- ``journal.csv``: ``cost-pipeline journal --month`` (``journal.journal_lines``): a closed month's frozen lines,
  an open month's lines as tonight states them (plus, in the first open month, the adjustments); the notes of the
  differences it holds (``journal.held_notes``, what the command prints on stderr) are returned with it;
- ``focus.csv``: ``cost-pipeline export --focus --month`` (``focus_export.write_focus``);
- ``statements/<team>.html``: ``cost-pipeline report --team --month`` (``statement.team_statement``), one per
  team with a cost line that month (unattributed cost has no team: it is in the journal, under the fallback centre);
- ``marts/<mart>.parquet``: the month's rows of every month-keyed mart (``month_marts``: a ``month`` date column),
  sorted, each ending with ``as_of`` (the night whose marts they are, as in the published files), with key-value
  metadata ``month``, ``as_of`` and the columns' descriptions, as tonight's marts state them (a closed month's too:
  its journal stays frozen, its restatement posts as an adjustment in the first open month).

The folder is written whole under a hidden temporary name, flushed, and swapped in atomically: the month's name is
a symbolic link to the folder of its latest write (``.<YYYY-MM>.<pid>-<hex>``), replaced by one ``os.replace``; a
reader sees the old month or the new one, never a mix. Writing one month never touches another month's folder.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from cost_pipeline.focus_export import write_focus
from cost_pipeline.ingest.lib.warehouse import quote
from cost_pipeline.journal import held_notes, journal_lines, write_csv
from cost_pipeline.publish import (
    AS_OF,
    MARTS,
    _fsync,
    _process_is_alive,
    as_of_column,
    column_descriptions,
    copy_to_parquet,
)
from cost_pipeline.statement import team_statement

JOURNAL_FILE = "journal.csv"
FOCUS_FILE = "focus.csv"
STATEMENTS_FOLDER = "statements"
MARTS_FOLDER = "marts"
MONTH_COLUMN = "month"


@dataclass(frozen=True)
class MonthFiles:
    """What one month's write produced: the folder, and per deliverable its paths, rows and total in cents."""

    month: date
    folder: Path
    journal: Path
    journal_lines: int
    journal_debit_cents: int
    journal_credit_cents: int
    journal_closed: bool
    journal_held: tuple[str, ...]  # journal.held_notes: the differences its is_unpriced lines hold, not adjusted
    focus: Path
    focus_rows: int
    focus_billed_cents: int
    statements: dict[str, Path]  # team -> its chargeback statement
    statement_cents: dict[str, int | None]  # team -> its cost lines' total (None: an unpriced line)
    marts: dict[str, int]  # month-keyed mart -> its rows of the month, in marts/<mart>.parquet


def monthly_root(warehouse: Path) -> Path:
    """``<warehouse folder>/<warehouse stem>.monthly``."""
    warehouse = Path(warehouse).resolve()
    return warehouse.with_name(f"{warehouse.stem}.monthly")


def month_folder(warehouse: Path, month: date) -> Path:
    return monthly_root(warehouse) / f"{month:%Y-%m}"


def _cents(amount: Decimal | None) -> int | None:
    return None if amount is None else int(amount * 100)


def teams_with_cost(con: duckdb.DuckDBPyConnection, month: date) -> list[str]:
    """The teams (marts.dim_batches.team) of the batches with a cost line in ``month``, sorted."""
    rows = con.execute(
        "select distinct b.team from marts.fct_cost_lines as l join marts.dim_batches as b on b.batch_id = l.batch_id "
        "where l.month = ? and b.team is not null order by b.team",
        [month],
    ).fetchall()
    return [team for (team,) in rows]


def _team_cents(con: duckdb.DuckDBPyConnection, team: str, month: date) -> int | None:
    [(total, unpriced)] = con.execute(
        "select sum(l.amount), count(*) filter (where l.is_unpriced) from marts.fct_cost_lines as l "
        "join marts.dim_batches as b on b.batch_id = l.batch_id where l.month = ? and b.team = ?",
        [month, team],
    ).fetchall()
    return None if unpriced else _cents(total)


def month_marts(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The month-keyed marts: the tables of the warehouse's ``marts`` schema with a ``month`` column of type date."""
    rows = con.execute(
        "select table_name from duckdb_columns() where database_name = current_database() and schema_name = ? "
        "and column_name = ? and data_type = 'DATE' order by 1",
        [MARTS, MONTH_COLUMN],
    ).fetchall()
    return [table for (table,) in rows]


def _write_mart(con: duckdb.DuckDBPyConnection, table: str, month: date, as_of: datetime, path: Path) -> int:
    """``table``'s rows of ``month`` into the Parquet file ``path``, sorted, ``as_of`` their last column; returns how
    many."""
    select = (
        f"select *, {as_of_column(as_of)} from {MARTS}.{quote(table)} "
        f"where {MONTH_COLUMN} = date '{month.isoformat()}' order by all"
    )
    database = con.execute("select current_database()").fetchall()[0][0]
    metadata = {"month": f"{month:%Y-%m}", AS_OF: as_of.isoformat(), **column_descriptions(con, database, table)}
    return copy_to_parquet(con, select, path, metadata)


def _statement_name(team: str) -> str:
    """A file name for ``team``: its characters that are not letters, digits, ``-`` or ``_`` become ``_``."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in team) + ".html"


def write_month(con: duckdb.DuckDBPyConnection, warehouse: Path, month: date, as_of: datetime) -> MonthFiles:
    """Write ``month``'s folder beside ``warehouse`` from ``con`` (the warehouse, read-only) and swap it in;
    ``as_of`` is the night whose marts the warehouse holds (``dagster_home.published_as_of``)."""
    root = monthly_root(warehouse)
    root.mkdir(exist_ok=True)
    _remove_abandoned(root)
    target = root / f"{month:%Y-%m}"
    written = root / f".{target.name}.{os.getpid()}-{uuid.uuid4().hex}"
    written.mkdir()
    try:
        lines, closed = journal_lines(con, month)
        held = tuple(held_notes(con, month))
        with open(written / JOURNAL_FILE, "w", encoding="utf-8", newline="") as out:
            write_csv(lines, out)
        focus_rows = write_focus(con, written / FOCUS_FILE, month)
        focus_billed = con.execute(
            "select coalesce(sum(resource_cost), 0) from marts.fct_resource_book where month = ?", [month]
        ).fetchall()[0][0]
        (written / STATEMENTS_FOLDER).mkdir()
        statements, statement_cents = {}, {}
        for team in teams_with_cost(con, month):
            path = written / STATEMENTS_FOLDER / _statement_name(team)
            path.write_text(team_statement(con, team, month), encoding="utf-8")
            statements[team] = target / STATEMENTS_FOLDER / path.name
            statement_cents[team] = _team_cents(con, team, month)
        (written / MARTS_FOLDER).mkdir()
        marts = {
            table: _write_mart(con, table, month, as_of, written / MARTS_FOLDER / f"{table}.parquet")
            for table in month_marts(con)
        }
        _fsync_tree(written)
        _swap(target, written)
    except BaseException:
        shutil.rmtree(written, ignore_errors=True)
        raise
    return MonthFiles(
        month=month,
        folder=target,
        journal=target / JOURNAL_FILE,
        journal_lines=len(lines),
        journal_debit_cents=_cents(sum((line.debit for line in lines), Decimal(0))),
        journal_credit_cents=_cents(sum((line.credit for line in lines), Decimal(0))),
        journal_closed=closed,
        journal_held=held,
        focus=target / FOCUS_FILE,
        focus_rows=focus_rows,
        focus_billed_cents=_cents(focus_billed),
        statements=statements,
        statement_cents=statement_cents,
        marts=marts,
    )


def _swap(target: Path, written: Path) -> None:
    """Point the month's link at ``written`` in one ``os.replace``, then remove the folder it pointed at before."""
    previous = target.resolve() if target.is_symlink() else None
    link = target.with_name(f".{target.name}.{os.getpid()}-{uuid.uuid4().hex}.link")
    link.symlink_to(written.name, target_is_directory=True)
    os.replace(link, target)
    _fsync(target.parent)
    if previous is not None and previous != written.resolve():
        shutil.rmtree(previous, ignore_errors=True)


def _remove_abandoned(root: Path) -> None:
    """Remove the hidden folders and links of writes whose process is gone (killed mid-write) and that no month's
    link points at."""
    current = {path.resolve() for path in root.iterdir() if path.is_symlink() and not path.name.startswith(".")}
    for path in root.glob(".*-*"):
        pid = path.name.removesuffix(".link").rsplit(".", 1)[-1].split("-", 1)[0]
        if not pid.isdigit() or _process_is_alive(int(pid)) or path.resolve() in current:
            continue
        if path.is_symlink():
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path, ignore_errors=True)


def _fsync_tree(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):
        _fsync(path)
    _fsync(folder)
