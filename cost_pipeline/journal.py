"""``cost-pipeline journal`` and ``cost-pipeline close``: the general-ledger journal finance posts, and closing a month.

``marts.fct_gl_journal`` is the journal as tonight's figures state it. Finance posts a month once, so a closed month
must never change: ``close`` copies the month's lines into ``raw.closed_journal`` (and records the close in
``raw.closed_months``), and from then on ``journal`` prints those frozen lines for it, whatever later nights say.

Months close in order; every month up to the latest closed one is closed (a month that had no lines when a later one
closed is closed with none). When a later night restates a closed month C, the difference between C's figures now
and what was posted for C (its frozen lines plus the adjustments already frozen in later closed months) posts as
adjustment lines in the first open month, the month after the latest closed one, each naming C in
``corrects_month``. Closing that month freezes its adjustments with it, so each difference posts exactly once.
Every amount is a ``Decimal`` to the cent; the journal is balanced per month because each part of it is.
"""

from __future__ import annotations

import csv
import getpass
import re
from collections import defaultdict
from dataclasses import astuple, dataclass, fields, replace
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TextIO

import duckdb

from cost_pipeline.calendar_months import next_month
from cost_pipeline.command_error import CommandError

JOURNAL_EXIT = 9  # docs/operations.md: the journal cannot be printed or the month cannot be closed
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")

_CLOSED_MONTHS_DDL = """
create table if not exists raw.closed_months (
    month date not null primary key,
    lines bigint not null,
    closed_at timestamp not null,
    closed_by varchar not null
)"""
_CLOSED_JOURNAL_DDL = """
create table if not exists raw.closed_journal (
    month date not null,
    line_type varchar not null,
    corrects_month date,
    cost_centre varchar not null,
    gl_account varchar not null,
    account_name varchar,
    account_role varchar not null,
    debit decimal(18, 2) not null,
    credit decimal(18, 2) not null,
    currency varchar not null,
    is_unpriced boolean not null,
    unpriced_lines bigint not null,
    unpriced_gpu_hours decimal(18, 4) not null
)"""


class JournalError(CommandError):
    """A journal that cannot be printed or a month that cannot be closed; the message is one line."""

    default_exit_code = JOURNAL_EXIT


@dataclass(frozen=True)
class JournalLine:
    """One line of the journal as posted; the CSV's columns, in order."""

    month: date
    line_type: str  # regular, or adjustment (a restatement of corrects_month after it was closed)
    corrects_month: date | None
    cost_centre: str
    gl_account: str
    account_name: str | None
    account_role: str  # expense or balancing
    debit: Decimal
    credit: Decimal
    currency: str
    is_unpriced: bool
    unpriced_lines: int
    unpriced_gpu_hours: Decimal

    @property
    def net(self) -> Decimal:
        return self.debit - self.credit

    @property
    def key(self) -> tuple[str, str]:
        return self.cost_centre, self.gl_account


COLUMNS = tuple(f.name for f in fields(JournalLine))


def parse_month(text: str) -> date:
    """``YYYY-MM`` as the month's first day; anything else is a wrong argument (exit 2)."""
    match = _MONTH.match(text or "")
    if not match or not 1 <= int(match.group(2)) <= 12:
        raise JournalError(f"--month {text!r} is not a month: give YYYY-MM, e.g. 2026-11", exit_code=2)
    return date(int(match.group(1)), int(match.group(2)), 1)


def _sided(line: JournalLine, net: Decimal) -> JournalLine:
    """``line`` carrying ``net`` (debit - credit) on its one side."""
    return replace(line, debit=max(net, Decimal(0)), credit=max(-net, Decimal(0)))


def _table_exists(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> bool:
    return bool(
        con.execute(
            "select count(*) from information_schema.tables where table_schema = ? and table_name = ?", [schema, table]
        ).fetchone()[0]
    )


def _current_lines(con: duckdb.DuckDBPyConnection, months: str, params: list) -> list[JournalLine]:
    """The lines of marts.fct_gl_journal for the months the ``months`` condition (on column month) selects."""
    if not _table_exists(con, "marts", "fct_gl_journal"):
        raise JournalError("the warehouse holds no journal: no night has built marts.fct_gl_journal")
    rows = con.execute(
        "select month, 'regular', null, cost_centre, gl_account, account_name, account_role, debit, credit, currency, "
        f"is_unpriced, unpriced_lines, unpriced_gpu_hours from marts.fct_gl_journal where {months}",
        params,
    ).fetchall()
    return [JournalLine(*row) for row in rows]


def _frozen_lines(con: duckdb.DuckDBPyConnection) -> list[JournalLine]:
    if not _table_exists(con, "raw", "closed_journal"):
        return []
    return [JournalLine(*row) for row in con.execute(f"select {', '.join(COLUMNS)} from raw.closed_journal").fetchall()]


def latest_closed(con: duckdb.DuckDBPyConnection) -> date | None:
    if not _table_exists(con, "raw", "closed_months"):
        return None
    return con.execute("select max(month) from raw.closed_months").fetchone()[0]


def adjustments(current: list[JournalLine], frozen: list[JournalLine], into: date) -> list[JournalLine]:
    """Adjustment lines posting in month ``into``: per closed month, cost centre and account, the figures
    ``current`` states for a closed month less what was posted for it (``frozen``: its own lines and the adjustments
    naming it); nothing where they agree."""
    posted: dict[tuple[date, str, str], Decimal] = defaultdict(Decimal)
    template: dict[tuple[date, str, str], JournalLine] = {}
    for line in frozen:
        corrects = line.corrects_month or line.month
        posted[(corrects, *line.key)] += line.net
        template.setdefault((corrects, *line.key), line)
    stated: dict[tuple[date, str, str], Decimal] = defaultdict(Decimal)
    for line in current:
        stated[(line.month, *line.key)] += line.net
        template[(line.month, *line.key)] = line  # the current line's name and unpriced count win
    lines = []
    for key in sorted(set(posted) | set(stated)):
        difference = stated.get(key, Decimal(0)) - posted.get(key, Decimal(0))
        if difference:
            base = replace(template[key], month=into, line_type="adjustment", corrects_month=key[0])
            if key not in stated:  # the line is gone from the month's figures: nothing of it is unpriced now
                base = replace(base, is_unpriced=False, unpriced_lines=0, unpriced_gpu_hours=Decimal(0))
            lines.append(_sided(base, difference))
    return lines


def _order(lines: list[JournalLine]) -> list[JournalLine]:
    return sorted(
        lines,
        key=lambda line: (
            line.line_type != "regular",
            line.corrects_month or line.month,
            line.cost_centre,
            line.account_role != "expense",
            line.gl_account,
        ),
    )


def journal_lines(con: duckdb.DuckDBPyConnection, month: date) -> tuple[list[JournalLine], bool]:
    """The journal of ``month`` as posted, and whether the month is closed: a closed month's frozen lines; an open
    month's lines as tonight states them, plus, in the first open month, the adjustments of every closed month."""
    closed = latest_closed(con)
    if closed is not None and month <= closed:
        return _order([line for line in _frozen_lines(con) if line.month == month]), True
    lines = _current_lines(con, "month = ?", [month])
    if closed is not None and month == next_month(closed):
        lines += adjustments(_current_lines(con, "month <= ?", [closed]), _frozen_lines(con), into=month)
    return _order(lines), False


def close_month(con: duckdb.DuckDBPyConnection, month: date, by: str | None = None) -> list[JournalLine]:
    """Freeze ``month``'s journal in raw.closed_journal and record the close; returns the frozen lines. Refused
    (``JournalError``) for a month closed already, or while an earlier month with lines or adjustments is open."""
    closed = latest_closed(con)
    if closed is not None and month <= closed:
        raise JournalError(f"{month:%Y-%m} is closed already (months up to {closed:%Y-%m} are closed)")
    earlier = [line.month for line in _current_lines(con, "month < ?", [month])]
    earlier = [m for m in earlier if closed is None or m > closed]
    if closed is not None and next_month(closed) < month and journal_lines(con, next_month(closed))[0]:
        earlier.append(next_month(closed))
    if earlier:
        raise JournalError(f"close {min(earlier):%Y-%m} first: months close in order and it has journal lines")
    lines, _ = journal_lines(con, month)
    con.execute("begin transaction")
    try:
        con.execute(_CLOSED_MONTHS_DDL)
        con.execute(_CLOSED_JOURNAL_DDL)
        if lines:
            con.executemany(
                f"insert into raw.closed_journal ({', '.join(COLUMNS)}) values ({', '.join('?' * len(COLUMNS))})",
                [list(astuple(line)) for line in lines],
            )
        con.execute(
            "insert into raw.closed_months values (?, ?, ?, ?)",
            [month, len(lines), datetime.now(UTC).replace(tzinfo=None), by or _who()],
        )
        con.execute("commit")
    except duckdb.Error:
        con.execute("rollback")
        raise
    return lines


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def write_csv(lines: list[JournalLine], out: TextIO) -> None:
    """A header and one row per line; amounts with exactly two decimals, dates as YYYY-MM-DD, no float anywhere."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for line in lines:
        row = []
        for name, value in zip(COLUMNS, astuple(line), strict=True):
            if name in ("debit", "credit"):
                row.append(f"{value:.2f}")  # Decimal formatting: exact, never through a float
            elif isinstance(value, bool):
                row.append("true" if value else "false")
            else:
                row.append("" if value is None else str(value))
        writer.writerow(row)
