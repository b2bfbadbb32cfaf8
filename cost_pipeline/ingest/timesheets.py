"""Timesheets (I7): Harvest "detailed time report" CSV exports, exactly as Harvest writes them.

Columns are read by their Harvest names in any order; optional ones may be missing and extra ones are ignored.
The batch key is the ``Project Code``; the ``Task`` is mapped to a role and a category by the contract
(``labour_tasks``), and a task the contract does not list is quarantined (rule ``labour_task``). ``Cost Rate`` may
be blank: the entry is then costed at the contract's assumed rate for its role. ``Currency`` is kept as its ISO
code and must be the contract's reporting currency (rule ``currency.reporting_currency``).
"""

from __future__ import annotations

from cost_pipeline.contract import schemas
from cost_pipeline.ingest.lib.records import ParsedFile, csv_line_parser
from cost_pipeline.ingest.lib.source import LineParser, RowLoader, Source

REQUIRED = ("Date", "Project Code", "Task", "Hours", "First Name", "Last Name")
COLUMNS = {
    "Date": "entry_date", "Client": "client", "Project": "project", "Project Code": "project_code", "Task": "task",
    "Notes": "notes", "Hours": "hours", "Billable?": "billable", "First Name": "first_name",
    "Last Name": "last_name", "Roles": "roles", "Cost Rate": "cost_rate", "Currency": "currency",
}


def currency_code(value: object) -> object:
    """Harvest writes a currency as its name and ISO code ("United States Dollar - USD"): the code."""
    if isinstance(value, str) and " - " in value:
        return value.rsplit(" - ", 1)[1].strip()
    return value


def harvest_row(row: dict[str, object]) -> dict[str, object]:
    """One detailed-time-report line (by Harvest column names) -> the raw timesheet shape."""
    mapped = {column: row.get(name) for name, column in COLUMNS.items()}
    mapped["currency"] = currency_code(mapped["currency"])
    return mapped


def harvest_line_parser() -> LineParser:
    read_csv = csv_line_parser(REQUIRED)

    def parse(lines: list[str], parsed: ParsedFile) -> None:
        read_csv(lines, parsed)
        parsed.rows[:] = [dict(harvest_row(row), source_line=row["source_line"]) for row in parsed.rows]

    return parse


SOURCES = (
    Source("timesheets", ("I7", "R20"), "timesheets", ("*.csv",),
           "Harvest time entries; names and cost rates are confidential",
           RowLoader(schemas.timesheets, lambda _schema, _options: harvest_line_parser())),
)
