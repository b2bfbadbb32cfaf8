"""Timesheets (I7): Harvest "detailed time report" CSV exports, exactly as Harvest writes them.

Columns are read by their Harvest names in any order; optional ones may be missing and extra ones are ignored.
The batch key is the ``Project Code``; the ``Task`` is mapped to a role and a category by the contract
(``labour_tasks``), and a task the contract does not list is quarantined (rule ``labour_task``). ``Cost Rate`` may
be blank: the entry is then costed at the contract's assumed rate for its role. Harvest writes ``0.0`` there for a
person who has no cost rate (its export writes no blank rate), so a ``Cost Rate`` of zero is no rate either, never a
free hour. ``Currency`` is kept as its ISO
code and must be the contract's reporting currency (rule ``currency.reporting_currency``); an entry with a
``Cost Rate`` and a blank ``Currency`` is quarantined (rule ``currency.not_nullable``), its rate's currency unknown. A
file without the ``Currency`` column states none: its rates are in the reporting currency.

Harvest writes ``Date`` in the account's date format, a setting of the Harvest account: ``2026-11-30``,
``11/30/2026``, ``30/11/2026``, ``30.11.2026``, ``2026.11.30`` or ``2026/11/30``. The source's ``date_format``
option says which (``iso``, the default, ``mdy``, ``dmy``, ``dmy_dots``, ``ymd_dots``, ``ymd_slashes``, or Harvest's
own name such as ``%d.%m.%Y``); an ISO date always loads, and a date in any other form is quarantined (rule
``entry_date.date_format``), never guessed: ``01/04/2026`` is 4 January in one account and 1 April in another.

Harvest writes ``Hours`` and ``Cost Rate`` in the account's number format, another setting of the account: a
decimal-comma account writes ``7,5`` hours and a ``1.234,50`` rate. The source's ``number_format`` option says which
(``1,234.56``, the default, ``1.234,56``, ``1 234,56`` or ``1'234.56``). The default reads numbers as before the
option existed, a decimal point and no thousands separator (``7.5``, ``1234.50``: what a decimal-point account's
export writes), so a decimal-comma account's ``7,5`` or ``1,500`` is quarantined, never guessed (``1,500`` is one and
a half in one account and fifteen hundred in another). Any other format reads its decimal separator and, between
groups of three digits, its thousands separator (``1.234,50`` is 1234.50 exactly); a number in another form is
quarantined (rules ``hours.number_format``, ``cost_rate.number_format``).

Each export's extent, the date, person, project and task of every row it holds (quarantined ones too), is recorded in
``raw.timesheets_extent``: staging lets a newer export replace an older one's entries inside what the newer covers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from cost_pipeline.contract import schemas
from cost_pipeline.ingest.lib.records import RowRejected, mapped_csv_line_parser
from cost_pipeline.ingest.lib.source import LineParser, RowLoader, Source, batch_lineage

REQUIRED = ("Date", "Project Code", "Task", "Hours", "First Name", "Last Name")
COLUMNS = {
    "Date": "entry_date",
    "Client": "client",
    "Project": "project",
    "Project Code": "project_code",
    "Task": "task",
    "Notes": "notes",
    "Hours": "hours",
    "Billable?": "billable",
    "First Name": "first_name",
    "Last Name": "last_name",
    "Roles": "roles",
    "Cost Rate": "cost_rate",
    "Currency": "currency",
}


def currency_code(value: object) -> object:
    """Harvest writes a currency as its name and ISO code ("United States Dollar - USD"): the code."""
    if isinstance(value, str) and " - " in value:
        return value.rsplit(" - ", 1)[1].strip()
    return value


def cost_rate(value: object) -> object:
    """Harvest's ``Cost Rate``; None (no rate, the role's assumed rate applies) for a zero.

    Harvest writes ``0.0`` for a person without a cost rate, as it writes ``0.0`` for the Billable Rate of a
    non-billable entry: its export cannot tell an unset rate from a rate of zero, and an unset one is by far the
    likelier (cost rates are an optional, administrator-only setting). Read as a rate, every such hour was costed at
    0.00 as measured labour. Any other text is left for the schema to check."""
    if value is None:
        return value
    try:
        return None if Decimal(str(value).strip()) == 0 else value
    except InvalidOperation:
        return value


# Harvest's account date formats (the account's "Date format" setting): an example, the separator and the order of
# day, month and year. Harvest's own names for them (its API's date_format, ``%d.%m.%Y``) are accepted too.
DATE_FORMATS = {
    "iso": ("2026-11-30", "-", "ymd"),
    "mdy": ("11/30/2026", "/", "mdy"),
    "dmy": ("30/11/2026", "/", "dmy"),
    "dmy_dots": ("30.11.2026", ".", "dmy"),
    "ymd_dots": ("2026.11.30", ".", "ymd"),
    "ymd_slashes": ("2026/11/30", "/", "ymd"),
}
HARVEST_SETTINGS = {
    "%Y-%m-%d": "iso",
    "%m/%d/%Y": "mdy",
    "%d/%m/%Y": "dmy",
    "%d.%m.%Y": "dmy_dots",
    "%Y.%m.%d": "ymd_dots",
    "%Y/%m/%d": "ymd_slashes",
}
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


def _date_pattern(separator: str, order: str) -> re.Pattern[str]:
    parts = {"y": r"(?P<y>\d{4})", "m": r"(?P<m>\d{1,2})", "d": r"(?P<d>\d{1,2})"}
    return re.compile(re.escape(separator).join(parts[letter] for letter in order), re.ASCII)


_PATTERNS = {name: _date_pattern(separator, order) for name, (_example, separator, order) in DATE_FORMATS.items()}


# Harvest's account number formats (the account's "Number format" setting), named by how they write 1234.56: the
# thousands separators and the decimal separator. The default is read as before the option existed (``number``: the
# text as it is, no thousands separator). A space-grouped account may write a no-break or a narrow no-break space.
NUMBER_FORMATS = {
    "1,234.56": ((), "."),
    "1.234,56": ((".",), ","),
    "1 234,56": ((" ", "\u00a0", "\u202f"), ","),
    "1'234.56": (("'",), "."),
}
DEFAULT_NUMBER_FORMAT = "1,234.56"
NUMBER_COLUMNS = {"hours": "Hours", "cost_rate": "Cost Rate"}


def _number_pattern(thousands: tuple[str, ...], decimal: str) -> re.Pattern[str]:
    """A number as the format writes it: digits, or digits grouped by three with one of its thousands separators
    (the same one throughout), then optionally its decimal separator and digits; a minus sign is kept for the
    schema to refuse (no hours or rate is negative)."""
    grouped = "|".join(rf"\d{{1,3}}(?:{re.escape(sep)}\d{{3}})+" for sep in thousands)
    whole = rf"(?:{grouped}|\d+)" if grouped else r"\d+"
    return re.compile(rf"(?P<sign>-?)(?P<whole>{whole})(?:{re.escape(decimal)}(?P<fraction>\d+))?", re.ASCII)


_NUMBER_PATTERNS = {name: _number_pattern(*separators) for name, separators in NUMBER_FORMATS.items()}


@dataclass(frozen=True)
class HarvestOptions:
    """The Harvest account's date format: iso (2026-11-30, the default), mdy (11/30/2026), dmy (30/11/2026),
    dmy_dots (30.11.2026), ymd_dots (2026.11.30) or ymd_slashes (2026/11/30); or Harvest's name (%d.%m.%Y). And its
    number format, as it writes 1234.56: 1,234.56 (the default: a decimal point, no thousands separator), 1.234,56,
    1 234,56 or 1'234.56."""

    date_format: str = "iso"
    number_format: str = DEFAULT_NUMBER_FORMAT

    def __post_init__(self) -> None:
        if self.date_format not in DATE_FORMATS and self.date_format not in HARVEST_SETTINGS:
            raise ValueError(
                f"timesheets date_format must be one of {', '.join(DATE_FORMATS)} (or Harvest's own name, such "
                f"as %d.%m.%Y), not {self.date_format!r}"
            )
        if self.number_format not in NUMBER_FORMATS:
            raise ValueError(
                f"timesheets number_format must be one of {', '.join(repr(n) for n in NUMBER_FORMATS)} (how the "
                f"Harvest account writes 1234.56), not {self.number_format!r}"
            )


def entry_date(value: object, date_format: str) -> object:
    """Harvest's ``Date`` as an ISO date, read in the account's date format; ``RowRejected`` in any other form."""
    if value is None:
        return value
    name = HARVEST_SETTINGS.get(date_format, date_format)
    text = str(value).strip()
    if _ISO_DATE.fullmatch(text):
        return text
    match = _PATTERNS[name].fullmatch(text) if name != "iso" else None
    if match is None:
        raise RowRejected(
            "entry_date.date_format",
            f"column Date is not a date written as {DATE_FORMATS[name][0]} (the source's date_format is {name}; "
            "a Harvest account that writes 11/30/2026, 30/11/2026 or 30.11.2026 sets it to mdy, dmy or dmy_dots)",
        )
    return f"{match['y']}-{int(match['m']):02d}-{int(match['d']):02d}"


def number(value: object, column: str, number_format: str) -> object:
    """Harvest's ``Hours`` or ``Cost Rate`` (``column``, the raw name) read in the account's number format, as the
    plain decimal text the schema reads (``1.234,50`` -> ``1234.50``, digit for digit: exact); ``RowRejected`` when
    it is not written so. The default format leaves the text as it is, as before the option existed."""
    if value is None or number_format == DEFAULT_NUMBER_FORMAT:
        return value
    match = _NUMBER_PATTERNS[number_format].fullmatch(str(value).strip())
    if match is None:
        raise RowRejected(
            f"{column}.number_format",
            f"column {NUMBER_COLUMNS[column]} is not a number written as {number_format} (the source's "
            f"number_format; a Harvest account that writes 7,5 hours sets it to 1.234,56 or 1 234,56)",
        )
    whole = re.sub(r"\D", "", match["whole"])
    fraction = f".{match['fraction']}" if match["fraction"] is not None else ""
    return f"{match['sign']}{whole}{fraction}"


def harvest_row(
    row: dict[str, object], date_format: str = "iso", number_format: str = DEFAULT_NUMBER_FORMAT
) -> dict[str, object]:
    """One detailed-time-report line (by Harvest column names) -> the raw timesheet shape; may raise RowRejected."""
    mapped = {column: row.get(name) for name, column in COLUMNS.items()}
    mapped["entry_date"] = entry_date(mapped["entry_date"], date_format)
    for column in NUMBER_COLUMNS:
        mapped[column] = number(mapped[column], column, number_format)
    mapped["cost_rate"] = cost_rate(mapped["cost_rate"])
    if "Currency" in row and mapped["currency"] is None and mapped["cost_rate"] is not None:
        raise RowRejected(
            "currency.not_nullable",
            "column Currency is blank while Cost Rate gives a rate: the rate's currency is unknown (never assumed)",
        )
    mapped["currency"] = currency_code(mapped["currency"])
    return mapped


def harvest_line_parser(options: HarvestOptions | None = None) -> LineParser:
    options = options or HarvestOptions()
    return mapped_csv_line_parser(REQUIRED, lambda row: harvest_row(row, options.date_format, options.number_format))


SOURCES = (
    Source(
        "timesheets",
        ("I7", "R20"),
        "timesheets",
        ("*.csv",),
        "Harvest time entries; names and cost rates are confidential",
        RowLoader(schemas.timesheets, lambda _schema, options: harvest_line_parser(options)),
        options=HarvestOptions,
        batch_lineage=batch_lineage("intermediate.int_labour_costed"),
        rows_stand_alone=True,
        # A newer export replaces what an older one says inside what it covers (stg_timesheets__entries): its first
        # to last date x its people, projects and tasks, read from every row it holds, quarantined or held ones too.
        extent=("entry_date", "first_name", "last_name", "project_code", "task"),
    ),
)
