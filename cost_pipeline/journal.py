"""``cost-pipeline journal`` and ``cost-pipeline close``: the general-ledger journal finance posts, and closing a month.

``marts.fct_gl_journal`` is the journal as tonight's figures state it. Finance posts a month once, so a closed month
must never change: ``close`` copies the month's lines into ``raw.closed_journal`` (and records the close in
``raw.closed_months``), and from then on ``journal`` prints those frozen lines for it, whatever later nights say.
``close`` also keeps what each batch's cost type posted, and where (``raw.closed_postings``, from
``intermediate.int_gl_postings``).

Months close in order; every month up to the latest closed one is closed (a month that had no lines when a later one
closed is closed with none). When a later night restates a closed month C, each batch's cost type in C whose known
amount now differs from what was posted for it (its frozen posting plus the adjustments already frozen in later
closed months) posts the difference as adjustment lines in the first open month, the month after the latest closed
one, each naming C in ``corrects_month``. A cost posted before posts its correction where it was posted (a
cost-centre move of a later contract version does not rewrite a closed month); a cost never posted posts as
tonight's mapping says. While some of its cost is unpriced (pending, no amount), its difference is held, not
posted: an unknown amount is not a known 0.00, so posted money is never reversed on the strength of it. The lines
it would post to are flagged ``is_unpriced`` and ``held_differences`` names it. Closing that month freezes its
adjustments with it, so each difference posts exactly once. Every amount is a ``Decimal`` to the cent; the journal
is balanced per month because each part of it is.
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
_CLOSED_POSTINGS_DDL = """
create table if not exists raw.closed_postings (
    month date not null,
    corrects_month date,
    batch_id varchar not null,
    cost_type varchar not null,
    cost_centre varchar not null,
    expense_account varchar not null,
    expense_account_name varchar,
    balancing_account varchar not null,
    balancing_account_name varchar,
    amount decimal(18, 2) not null,
    unpriced_lines bigint not null,
    unpriced_gpu_hours decimal(18, 4) not null,
    currency varchar not null
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
# The batch of a difference an earlier release's close holds per cost centre (``legacy_adjustments``).
EVERY_BATCH = "every batch"


@dataclass(frozen=True)
class Posting:
    """What one batch's cost type posts in a month: its cost centre and accounts, and its known (priced) amount; the
    columns of intermediate.int_gl_postings and raw.closed_postings."""

    month: date  # the month whose journal holds it
    corrects_month: date | None  # on an adjustment, the closed month whose cost it corrects
    batch_id: str
    cost_type: str
    cost_centre: str
    expense_account: str
    expense_account_name: str | None
    balancing_account: str
    balancing_account_name: str | None
    amount: Decimal
    unpriced_lines: int
    unpriced_gpu_hours: Decimal
    currency: str

    @property
    def cost(self) -> tuple[date, str, str]:
        """The cost it posts: its month, batch and cost type."""
        return self.corrects_month or self.month, self.batch_id, self.cost_type


POSTING_COLUMNS = tuple(f.name for f in fields(Posting))


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
        ).fetchall()[0][0]
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


def _current_postings(con: duckdb.DuckDBPyConnection, months: str, params: list) -> list[Posting]:
    """The rows of intermediate.int_gl_postings for the months the ``months`` condition selects."""
    rows = con.execute(
        f"select month, null, {', '.join(POSTING_COLUMNS[2:])} from intermediate.int_gl_postings where {months}",
        params,
    ).fetchall()
    return [Posting(*row) for row in rows]


def _frozen_postings(con: duckdb.DuckDBPyConnection) -> list[Posting]:
    if not _table_exists(con, "raw", "closed_postings"):
        return []
    rows = con.execute(f"select {', '.join(POSTING_COLUMNS)} from raw.closed_postings").fetchall()
    return [Posting(*row) for row in rows]


def _frozen_lines(con: duckdb.DuckDBPyConnection) -> list[JournalLine]:
    if not _table_exists(con, "raw", "closed_journal"):
        return []
    return [JournalLine(*row) for row in con.execute(f"select {', '.join(COLUMNS)} from raw.closed_journal").fetchall()]


def latest_closed(con: duckdb.DuckDBPyConnection) -> date | None:
    if not _table_exists(con, "raw", "closed_months"):
        return None
    return con.execute("select max(month) from raw.closed_months").fetchall()[0][0]


def adjustments(current: list[Posting], posted: list[Posting], into: date) -> tuple[list[Posting], list[Posting]]:
    """What posts in month ``into`` for the closed months, and what is held: per closed month, batch and cost type,
    the known amount ``current`` states less what was posted for it (``posted``: its own postings and the
    adjustments naming its month); nothing where they agree. A cost posted before is corrected where it was posted;
    one never posted goes where ``current`` maps it. A difference whose cost is partly unpriced now (its amount
    unknown) is held: it is returned in the second list, carrying the unpriced count, and posts nothing."""
    posted_amount: dict[tuple[date, str, str], Decimal] = defaultdict(Decimal)
    where: dict[tuple[date, str, str], Posting] = {}
    for posting in posted:
        posted_amount[posting.cost] += posting.amount
        where.setdefault(posting.cost, posting)
    stated = {posting.cost: posting for posting in current}
    adjusting, held = [], []
    for cost in sorted(set(posted_amount) | set(stated)):
        now = stated.get(cost)
        difference = (now.amount if now else Decimal(0)) - posted_amount.get(cost, Decimal(0))
        if not difference:
            continue
        base = replace(
            where.get(cost) or now,
            month=into,
            corrects_month=cost[0],
            amount=difference,
            unpriced_lines=0,
            unpriced_gpu_hours=Decimal("0.0000"),
        )
        if now is not None and now.unpriced_lines:
            held.append(replace(base, unpriced_lines=now.unpriced_lines, unpriced_gpu_hours=now.unpriced_gpu_hours))
        else:
            adjusting.append(base)
    return adjusting, held


def adjustment_lines(adjusting: list[Posting], held: list[Posting]) -> list[JournalLine]:
    """The journal lines of ``adjusting`` per closed month, cost centre and account: each posting debits its expense
    account and credits its balancing account with its amount. A held posting adds no amount, only its unpriced
    count, so the lines it would post to are flagged is_unpriced (and shown even when they post 0.00)."""
    sums: dict[tuple, list] = {}
    for posting, amount in [(p, p.amount) for p in adjusting] + [(p, Decimal(0)) for p in held]:
        sides = (
            ("expense", posting.expense_account, posting.expense_account_name, amount),
            ("balancing", posting.balancing_account, posting.balancing_account_name, -amount),
        )
        for role, account, name, net in sides:
            key = (posting.month, posting.corrects_month, posting.cost_centre, account, role)
            line = sums.setdefault(key, [Decimal("0.00"), name, 0, Decimal("0.0000"), posting.currency])
            line[0] += net
            line[2] += posting.unpriced_lines
            line[3] += posting.unpriced_gpu_hours
    lines = []
    for (month, corrects, centre, account, role), (net, name, unpriced, gpu_hours, currency) in sums.items():
        line = JournalLine(
            month=month,
            line_type="adjustment",
            corrects_month=corrects,
            cost_centre=centre,
            gl_account=account,
            account_name=name,
            account_role=role,
            debit=Decimal(0),
            credit=Decimal(0),
            currency=currency,
            is_unpriced=unpriced > 0,
            unpriced_lines=unpriced,
            unpriced_gpu_hours=gpu_hours,
        )
        lines.append(_sided(line, net))
    return lines


def legacy_adjustments(
    current: list[JournalLine], frozen: list[JournalLine], into: date
) -> tuple[list[JournalLine], list[Posting]]:
    """Adjustment lines posting in month ``into`` for months closed before raw.closed_postings kept what each batch
    posted (a warehouse an earlier release closed), as that release measured them: per closed month, cost centre and
    account, the figures ``current`` states for the month less what was posted for it (``frozen``: its own lines and
    the adjustments naming it). While a cost centre's month has an unpriced line now, its whole difference is held
    (the lines balance per cost centre): its unpriced lines are shown at 0.00, flagged, and the second list names
    it with the cost centre's unpriced cost lines of the month (what holds it, wherever they post), not only those
    of the accounts that differ."""
    posted: dict[tuple[date, str, str, str], Decimal] = defaultdict(Decimal)
    template: dict[tuple[date, str, str, str], JournalLine] = {}
    for line in frozen:
        key = (line.corrects_month or line.month, line.cost_centre, line.gl_account, line.account_role)
        posted[key] += line.net
        template.setdefault(key, line)
    stated: dict[tuple[date, str, str, str], Decimal] = defaultdict(Decimal)
    for line in current:
        key = (line.month, line.cost_centre, line.gl_account, line.account_role)
        stated[key] += line.net
        template[key] = line  # the current line's name and unpriced count win
    unpriced = {(line.month, line.cost_centre) for line in current if line.is_unpriced}
    # What holds a cost centre's month: all of its unpriced cost lines, each counted once, on its expense line.
    centre_unpriced: dict[tuple[date, str], tuple[int, Decimal]] = defaultdict(lambda: (0, Decimal("0.0000")))
    for line in current:
        if line.account_role == "expense":
            count, gpu_hours = centre_unpriced[(line.month, line.cost_centre)]
            centre_unpriced[(line.month, line.cost_centre)] = (
                count + line.unpriced_lines,
                gpu_hours + line.unpriced_gpu_hours,
            )
    lines, held = [], {}
    for key in sorted(set(posted) | set(stated)):
        difference = stated.get(key, Decimal(0)) - posted.get(key, Decimal(0))
        if not difference:
            continue
        month, centre, _, role = key
        base = replace(template[key], month=into, line_type="adjustment", corrects_month=month)
        if (month, centre) not in unpriced:
            if key not in stated:  # the line is gone from the month's figures: nothing of it is unpriced now
                base = replace(base, is_unpriced=False, unpriced_lines=0, unpriced_gpu_hours=Decimal(0))
            lines.append(_sided(base, difference))
            continue
        if base.is_unpriced:
            lines.append(_sided(base, Decimal(0)))
        if role == "expense":
            note = held.setdefault(
                (month, centre),
                Posting(
                    into,
                    month,
                    EVERY_BATCH,
                    "cost",
                    centre,
                    base.gl_account,
                    base.account_name,
                    "",
                    None,
                    Decimal("0.00"),
                    0,
                    Decimal("0.0000"),
                    base.currency,
                ),
            )
            held[(month, centre)] = replace(
                note,
                expense_account=note.expense_account if note.unpriced_lines else base.gl_account,
                amount=note.amount + difference,
                unpriced_lines=note.unpriced_lines + base.unpriced_lines,
                unpriced_gpu_hours=note.unpriced_gpu_hours + base.unpriced_gpu_hours,
            )
    return lines, [
        replace(note, unpriced_lines=count, unpriced_gpu_hours=gpu_hours)
        for key, note in held.items()
        for count, gpu_hours in [centre_unpriced[key]]
    ]


def _legacy_months(con: duckdb.DuckDBPyConnection) -> set[date]:
    """Closed months whose lines were frozen before raw.closed_postings kept what each batch posted."""
    with_lines = {line.month for line in _frozen_lines(con) if line.line_type == "regular"}
    return with_lines - {posting.month for posting in _frozen_postings(con) if posting.corrects_month is None}


def _closed_months_adjustments(
    con: duckdb.DuckDBPyConnection, closed: date
) -> tuple[list[Posting], list[Posting], list[JournalLine]]:
    """What posts for every month up to ``closed`` in the month after it: the adjusting postings (``adjustments``),
    the held ones, and the adjustment lines of both, with those of months closed before raw.closed_postings existed
    (``legacy_adjustments``)."""
    legacy = _legacy_months(con)
    into = next_month(closed)
    adjusting, held = adjustments(
        [posting for posting in _current_postings(con, "month <= ?", [closed]) if posting.month not in legacy],
        [posting for posting in _frozen_postings(con) if posting.cost[0] not in legacy],
        into,
    )
    lines = adjustment_lines(adjusting, held)
    if legacy:
        legacy_lines, legacy_held = legacy_adjustments(
            [line for line in _current_lines(con, "month <= ?", [closed]) if line.month in legacy],
            [line for line in _frozen_lines(con) if (line.corrects_month or line.month) in legacy],
            into,
        )
        lines += legacy_lines
        held += legacy_held
    return adjusting, held, lines


def held_differences(con: duckdb.DuckDBPyConnection, month: date) -> list[Posting]:
    """The differences the first open ``month`` holds (``adjustments``); none in any other month."""
    closed = latest_closed(con)
    if closed is None or month != next_month(closed):
        return []
    return _closed_months_adjustments(con, closed)[1]


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
        lines += _closed_months_adjustments(con, closed)[2]
    return _order(lines), False


def close_month(con: duckdb.DuckDBPyConnection, month: date, by: str | None = None) -> list[JournalLine]:
    """Freeze ``month``'s journal in raw.closed_journal, what each batch's cost type posted in it (its own postings
    and its adjustments) in raw.closed_postings, and record the close; returns the frozen lines. Refused
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
    postings = _current_postings(con, "month = ?", [month])
    if closed is not None and month == next_month(closed):
        postings += _closed_months_adjustments(con, closed)[0]
    con.execute("begin transaction")
    try:
        con.execute(_CLOSED_MONTHS_DDL)
        con.execute(_CLOSED_JOURNAL_DDL)
        con.execute(_CLOSED_POSTINGS_DDL)
        for table, columns, rows in (
            ("closed_journal", COLUMNS, lines),
            ("closed_postings", POSTING_COLUMNS, postings),
        ):
            if rows:
                con.executemany(
                    f"insert into raw.{table} ({', '.join(columns)}) values ({', '.join('?' * len(columns))})",
                    [list(astuple(row)) for row in rows],
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


def held_note(posting: Posting) -> str:
    """One line naming a held difference: the closed month, batch, cost type, where it would post, and why: the
    unpriced lines of what holds it, the batch's cost type, or (``EVERY_BATCH``, ``legacy_adjustments``) its whole
    cost centre."""
    whole_centre = posting.batch_id == EVERY_BATCH  # its amount is the cost centre's, over every expense account
    whose = f"{posting.cost_centre}'s" if whole_centre else "its"
    where = f"{whose} expense accounts" if whole_centre else f"{posting.cost_centre} {posting.expense_account}"
    return (
        f"held for {posting.corrects_month:%Y-%m}: {posting.batch_id}'s {posting.cost_type} on {where} "
        f"differs by {posting.amount:.2f} from what was posted, but is not adjusted: "
        f"{posting.unpriced_lines} of {whose} cost lines ({posting.unpriced_gpu_hours} GPU-h) have no amount yet"
    )


def held_notes(con: duckdb.DuckDBPyConnection, month: date) -> list[str]:
    """One ``held_note`` per difference ``month`` holds (``held_differences``): what ``journal`` and ``close`` print
    on stderr, and the monthly journal asset logs as warnings and keeps in its metadata, for its lines flagged
    ``is_unpriced``."""
    return [held_note(posting) for posting in held_differences(con, month)]
