"""Timesheets (I7), external-service invoices (I8) and the batch plan and rounds (I10, R18).

Pure parsing of Harvest exports, the contract's labour tables, the ingest assets materialised into a temporary
DuckDB, and the demo's labour, services and rounds checked against figures computed here by hand.
"""

from __future__ import annotations

import copy
import csv
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from cost_pipeline.cli import run_pipeline
from cost_pipeline.contract import Contract, load_contract
from cost_pipeline.contract.schemas import batch_registry, service_invoices, timesheets
from cost_pipeline.defs.ingest import source_assets
from cost_pipeline.defs.resources import LandingZone, Warehouse
from cost_pipeline.demo import HARVEST_HEADER as DEMO_HARVEST_HEADER
from cost_pipeline.demo import TIMESHEET_ENTRIES
from cost_pipeline.ingest.lib.records import parse_file
from cost_pipeline.ingest.lib.validate import validate_files, validate_rows
from cost_pipeline.ingest.registry import sources
from cost_pipeline.ingest.timesheets import HarvestOptions, harvest_line_parser
from tests.test_end_to_end import job_cost
from tests.test_telemetry_formats import _load

HARVEST_HEADER = (
    "Date,Client,Project,Project Code,Task,Notes,Hours,Hours Rounded,Billable?,Invoiced?,Approved?,"
    "First Name,Last Name,Roles,Employee?,Billable Rate,Billable Amount,Cost Rate,Cost Amount,Currency,"
    "External Reference URL"
)
CANARY = "173.37"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def cents(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"), ROUND_HALF_UP)


def parse_timesheet(
    path: Path, contract: Contract | None = None, date_format: str = "iso", number_format: str = "1,234.56"
):
    parsed = parse_file(path, harvest_line_parser(HarvestOptions(date_format, number_format)))
    valid = validate_rows(parsed, timesheets(contract or load_contract()))
    return parsed, valid


# ---- pure parsing -------------------------------------------------------------------------------------------------


def test_harvest_columns_in_another_order_with_extra_and_missing_optional_columns(tmp_path):
    # Reordered, "Client" and "Currency" missing, an extra column Harvest never wrote; blank Cost Rate allowed.
    path = write(
        tmp_path / "t.csv",
        "Last Name,First Name,Hours,Task,Project Code,Date,Cost Rate,Something Else\n"
        "Chen,Alice,7.5,Training runs,B-7,2026-11-03,120.00,x\n"
        "Lind,Eva,2,Cluster support,B-8,2026-11-06,,y\n",
    )
    parsed, valid = parse_timesheet(path)
    assert parsed.rejections == [] and parsed.rows_in == 2
    rows = valid.to_dict("records")
    assert [
        (
            r["entry_date"],
            r["project_code"],
            r["task"],
            r["hours"],
            r["first_name"],
            r["last_name"],
            r["cost_rate"],
            r["client"],
        )
        for r in rows
    ] == [
        ("2026-11-03", "B-7", "Training runs", "7.5", "Alice", "Chen", "120.00", None),
        ("2026-11-06", "B-8", "Cluster support", "2", "Eva", "Lind", None, None),
    ]


# Lines as Harvest's detailed time report writes them, the first two of a person who has a billable rate and no cost
# rate: its newer header (Employee Id, no Hours Rounded), `""` for empty notes, the currency by name, and 0.0 for the
# Cost Rate and Cost Amount it has no rate for (as for the Billable Rate of a non-billable entry). The shape is that of
# a real export (JeffandyAllTogether/100-days-tracker, harvest_time_report.csv, which has no licence to copy it: so
# the lines are rewritten here with this project's batches, tasks and people); a third person has a cost rate.
HARVEST_WITHOUT_COST_RATES = (
    "Date,Client,Project,Project Code,Task,Notes,Hours,Billable?,Invoiced?,Approved?,First Name,Last Name,"
    "Employee Id,Roles,Employee?,Billable Rate,Billable Amount,Cost Rate,Cost Amount,Currency,External Reference URL\n"
    '2026-11-03,In,RL,B-7,Training runs,"",1.85,Yes,No,No,Ann,Lee,,,Yes,48.0,88.8,0.0,0.0,'
    "United States Dollar - USD,\n"
    "2026-11-04,In,RL,B-7,Rerun after failure,retry,0.22,No,No,No,Ann,Lee,,,Yes,0.0,0.0,0.0,0.0,"
    "United States Dollar - USD,\n"
    "2026-11-04,In,RL,B-7,Training runs,,2.5,Yes,No,No,Bo,Kim,,,Yes,48.0,120.0,100.0,250.0,"
    "United States Dollar - USD,\n"
)


def test_a_zero_cost_rate_is_what_harvest_writes_for_no_rate_and_loads_as_no_rate(tmp_path):
    """Harvest writes 0.0 for a person without a cost rate: read as a rate, each of their hours cost 0.00 as measured
    labour. It is no rate, as a blank is: raw.timesheets keeps none, and staging prices it at the role's assumed rate
    as it does a blank (test_demo_labour_every_entry_by_hand)."""
    landing = tmp_path / "landing"
    write(landing / "timesheets" / "harvest_time_report.csv", HARVEST_WITHOUT_COST_RATES)
    rows, quarantined, ledger = _load(landing, "timesheets")
    assert quarantined == []
    assert ledger == {"timesheets/harvest_time_report.csv": (3, 3, 0)}
    assert [(r["first_name"], r["hours"], r["cost_rate"], r["currency"]) for r in rows] == [
        ("Ann", Decimal("1.85"), None, "USD"),
        ("Ann", Decimal("0.22"), None, "USD"),
        ("Bo", Decimal("2.5"), Decimal("100.00"), "USD"),
    ]


HARVEST_DATES = {
    "iso": ("2026-11-27", "2026-04-01"),
    "mdy": ("11/27/2026", "4/1/2026"),
    "dmy": ("27/11/2026", "01/04/2026"),
    "dmy_dots": ("27.11.2026", "01.04.2026"),
    "ymd_dots": ("2026.11.27", "2026.4.1"),
    "ymd_slashes": ("2026/11/27", "2026/04/01"),
}


def _harvest_dates(tmp_path: Path, written: str) -> Path:
    """Harvest writes Date in the account's date format (a Harvest account setting); the same two entries each way."""
    first, second = HARVEST_DATES[written]
    return write(
        tmp_path / f"{written}.csv",
        "\n".join(
            [
                HARVEST_HEADER,
                f"{first},In,RL,B-7,Training runs,,2,2,No,No,Yes,Ann,Lee,,Yes,0,0,100.00,200.00,USD,",
                f"{second},In,RL,B-7,Training runs,,3,3,No,No,Yes,Ann,Lee,,Yes,0,0,100.00,300.00,USD,",
            ]
        )
        + "\n",
    )


@pytest.mark.parametrize("date_format", list(HARVEST_DATES))
def test_harvest_dates_are_read_in_the_account_date_format_the_source_is_given(tmp_path, date_format):
    parsed, valid = parse_timesheet(_harvest_dates(tmp_path, date_format), date_format=date_format)
    assert parsed.rejections == []
    assert list(valid["entry_date"]) == ["2026-11-27", "2026-04-01"]
    # An ISO date is never ambiguous: it loads whatever the account's format.
    parsed, valid = parse_timesheet(_harvest_dates(tmp_path, "iso"), date_format=date_format)
    assert parsed.rejections == [] and list(valid["entry_date"]) == ["2026-11-27", "2026-04-01"]


@pytest.mark.parametrize("written", ["mdy", "dmy"])
def test_without_the_date_format_only_iso_dates_load_and_others_are_never_guessed(tmp_path, written):
    parsed, valid = parse_timesheet(_harvest_dates(tmp_path, written))
    assert valid.empty and parsed.rows_in == 2
    assert [(r.line, r.rule) for r in parsed.rejections] == [(line, "entry_date.date_format") for line in (2, 3)]
    assert all("a date written as 2026-11-30" in r.message and "date_format" in r.message for r in parsed.rejections)
    assert all(HARVEST_DATES[written][0] not in r.message for r in parsed.rejections)
    # The setting is followed, never second-guessed: 11/27/2026 read as day/month is no date at all.
    other = "dmy" if written == "mdy" else "mdy"
    parsed, valid = parse_timesheet(_harvest_dates(tmp_path, written), date_format=other)
    assert [r.line for r in parsed.rejections] == [2]  # month 30 does not exist
    assert list(valid["entry_date"]) == ["2026-01-04"]  # what the setting says, not a guess


def test_a_dotted_day_first_date_loads_when_configured_and_is_quarantined_without_it(tmp_path):
    # 30.11.2026, as a Harvest account set to %d.%m.%Y writes it: configured by either name, it loads as 30 November.
    for setting in ("dmy_dots", "%d.%m.%Y"):
        parsed, valid = parse_timesheet(_harvest_dates(tmp_path, "dmy_dots"), date_format=setting)
        assert parsed.rejections == [] and list(valid["entry_date"]) == ["2026-11-27", "2026-04-01"]
    # Without the setting only ISO dates load: both lines are quarantined, in words, without the value itself.
    parsed, valid = parse_timesheet(_harvest_dates(tmp_path, "dmy_dots"))
    assert valid.empty and [(r.line, r.rule) for r in parsed.rejections] == [
        (2, "entry_date.date_format"),
        (3, "entry_date.date_format"),
    ]
    assert all("a date written as 2026-11-30" in r.message and "dmy_dots" in r.message for r in parsed.rejections)
    assert all("27.11" not in r.message and "01.04" not in r.message for r in parsed.rejections)
    # A slashed setting does not take dots, and a dotted one does not take slashes: never guessed.
    parsed, valid = parse_timesheet(_harvest_dates(tmp_path, "dmy_dots"), date_format="dmy")
    assert valid.empty and len(parsed.rejections) == 2
    parsed, valid = parse_timesheet(_harvest_dates(tmp_path, "dmy"), date_format="dmy_dots")
    assert valid.empty and len(parsed.rejections) == 2


def test_a_wrong_date_format_is_refused():
    with pytest.raises(ValueError, match="iso, mdy, dmy, dmy_dots"):
        HarvestOptions("ymd")


def test_the_date_format_is_the_timesheets_assets_run_config(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    _harvest_dates(landing / "timesheets", "dmy")
    result = dg.materialize(
        [next(a for a in source_assets if a.key.path[-1] == "timesheets")],
        instance=dg.DagsterInstance.ephemeral(),
        resources={"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))},
        run_config={"ops": {"raw__timesheets": {"config": {"date_format": "dmy"}}}},
    )
    assert result.success
    con = duckdb.connect(str(warehouse), read_only=True)
    dates = [str(d) for (d,) in con.execute("select entry_date from raw.timesheets order by source_line").fetchall()]
    con.close()
    assert dates == ["2026-11-27", "2026-04-01"]


# The same three entries as Harvest accounts of each number format write them (1,234.56 the default, a decimal point
# and no thousands separator as a decimal-point account's export has them): hours, Billable Rate and Amount, Cost Rate
# and Amount, in the CSV quoting Harvest's export gives a field holding a comma. Hours 7.5, 0.25 and 2; rates 1234.50,
# 173.37 and 0 (no rate).
HARVEST_NUMBERS = {
    "1,234.56": (("7.5", "1234.50", "9258.75"), ("0.25", "173.37", "43.34"), ("2", "0.0", "0.0")),
    "1.234,56": (("7,5", "1.234,50", "9.258,75"), ("0,25", "173,37", "43,34"), ("2", "0,0", "0,0")),
    "1 234,56": (("7,5", "1\u00a0234,50", "9 258,75"), ("0,25", "173,37", "43,34"), ("2", "0,0", "0,0")),
    "1'234.56": (("7.5", "1'234.50", "9'258.75"), ("0.25", "173.37", "43.34"), ("2", "0.0", "0.0")),
}


def _harvest_numbers(tmp_path: Path, written: str) -> Path:
    path = tmp_path / f"numbers_{len(list(tmp_path.iterdir()))}.csv"
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(HARVEST_HEADER.split(","))
        for hours, rate, amount in HARVEST_NUMBERS[written]:
            writer.writerow(
                ["2026-11-03", "In", "RL", "B-7", "Training runs", "", hours, hours, "No", "No", "Yes", "Ann", "Lee"]
                + ["", "Yes", rate, amount, rate, amount, "USD", ""]
            )
    return path


@pytest.mark.parametrize("number_format", list(HARVEST_NUMBERS))
def test_harvest_numbers_are_read_exactly_in_the_account_number_format_the_source_is_given(tmp_path, number_format):
    parsed, valid = parse_timesheet(_harvest_numbers(tmp_path, number_format), number_format=number_format)
    assert parsed.rejections == []
    # Digit for digit, as the plain decimal the schema reads (exact; the zero rate is no rate, as Harvest means it).
    assert [(r["hours"], r["cost_rate"]) for r in valid.to_dict("records")] == [
        ("7.5", "1234.50"),
        ("0.25", "173.37"),
        ("2", None),
    ]


def test_without_the_number_format_a_decimal_comma_is_never_guessed(tmp_path):
    """The default reads numbers as before the option existed: a decimal-comma account's lines are quarantined
    (7,5 is not 75 hours, nor 7.5 unless the source says so), and a plain number loads in any format."""
    parsed, valid = parse_timesheet(_harvest_numbers(tmp_path, "1.234,56"))
    assert [(r.line, r.rule) for r in parsed.rejections] == [
        (2, "hours.hours_of_a_day"),
        (3, "hours.hours_of_a_day"),
        (4, "cost_rate.str_matches"),
    ]
    assert list(valid["hours"]) == []
    # 1,500 is one and a half in one account and fifteen hundred in another: the default takes neither.
    path = write(
        tmp_path / "grouped.csv",
        f'{HARVEST_HEADER}\n2026-11-03,In,RL,B-7,Training runs,,2,2,No,No,Yes,Ann,Lee,,Yes,0,0,"1,500",0,USD,\n',
    )
    parsed, valid = parse_timesheet(path)
    assert valid.empty and [(r.line, r.rule) for r in parsed.rejections] == [(2, "cost_rate.str_matches")]


def test_a_number_not_written_in_the_declared_format_is_quarantined_with_its_rule_and_no_value(tmp_path):
    # A point where the account writes a comma, groups not of three, the other format's spaces: never guessed.
    lines = [
        HARVEST_HEADER,
        '2026-11-03,In,RL,B-7,Training runs,,7.5,7.5,No,No,Yes,Ann,Lee,,Yes,0,0,"173,37",0,USD,',
        '2026-11-03,In,RL,B-7,Training runs,,"2,5",2,No,No,Yes,Ann,Lee,,Yes,0,0,"12.34,50",0,USD,',
        '2026-11-04,In,RL,B-7,Training runs,,"2,5",2,No,No,Yes,Ann,Lee,,Yes,0,0,"1 234,50",0,USD,',
        '2026-11-05,In,RL,B-7,Training runs,,"2,5",2,No,No,Yes,Ann,Lee,,Yes,0,0,"1.234,50",0,USD,',
        '2026-11-06,In,RL,B-7,Training runs,,"-2,5",2,No,No,Yes,Ann,Lee,,Yes,0,0,"1.234,50",0,USD,',
    ]
    parsed, valid = parse_timesheet(write(tmp_path / "t.csv", "\n".join(lines) + "\n"), number_format="1.234,56")
    assert [(r.line, r.rule) for r in parsed.rejections] == [
        (2, "hours.number_format"),
        (3, "cost_rate.number_format"),
        (4, "cost_rate.number_format"),
        (6, "hours.hours_of_a_day"),  # read as -2.5: the schema refuses it as it refuses -2.5 anywhere
    ]
    assert [(r["hours"], r["cost_rate"]) for r in valid.to_dict("records")] == [("2.5", "1234.50")]
    # The message says what the column should hold, never the value (a cost rate is confidential).
    for rejection, value in zip(parsed.rejections[:3], ("7.5", "12.34,50", "1 234,50"), strict=True):
        assert "written as 1.234,56" in rejection.message and "number_format" in rejection.message
        assert value not in rejection.message and "173" not in rejection.message


def test_a_wrong_number_format_is_refused():
    with pytest.raises(ValueError, match="'1,234.56', '1.234,56', '1 234,56'"):
        HarvestOptions(number_format="1.234")


def test_a_decimal_comma_harvest_export_loads_through_the_night_with_its_labour_by_hand(demo_copy):
    """The demo's time report as a Harvest account set to 30.11.2026 and 1.234,56 writes it (the source given both),
    with one more entry: B-10's half hour of coordination at 1.234,50. Every entry loads, none is quarantined, and
    the labour is the demo's (test_demo_labour_per_batch_by_role_and_category) plus B-10's 0.5 x 1234.50 = 617.25."""
    landing = demo_copy / "landing"
    entries = [
        *TIMESHEET_ENTRIES,
        ("2026-11-10", "B-10", "Coordination", "0.5", "Farah", "Haddad", "Programme", "1234.50"),
    ]

    def european(number: str) -> str:
        whole, _, fraction = number.partition(".")
        grouped = f"{int(whole):,}".replace(",", ".")
        return grouped + ("," + fraction if fraction else "")

    with (landing / "timesheets" / "harvest_time_report_2026-11.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(DEMO_HARVEST_HEADER)
        for date, code, task, hours, first, last, roles, rate in entries:
            day = f"{date[8:10]}.{date[5:7]}.{date[:4]}"
            amount = european(f"{Decimal(hours) * Decimal(rate):.2f}") if rate else ""
            row = [day, "Internal", "assistant-rl", code, task, "", european(hours), european(hours), "No", "No"]
            row += ["Yes", first, last, roles, "Yes", "0,0", "0,0", european(rate) if rate else "", amount]
            writer.writerow([*row, "United States Dollar - USD", ""])
    text = (landing / "timesheets" / "harvest_time_report_2026-11.csv").read_text(encoding="utf-8")
    assert '"1.234,50"' in text and '"1,5"' in text and "03.11.2026" in text  # as Harvest writes them
    warehouse = demo_copy / "warehouse.duckdb"
    options = {"date_format": "dmy_dots", "number_format": "1.234,56"}
    assert run_pipeline(landing, warehouse, {"ops": {"raw__timesheets": {"config": options}}})

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        quarantined = con.execute("select line, rule from raw.quarantine where source = 'timesheets'").fetchall()
        totals = dict(
            con.execute("select batch_id, sum(labour_cost) from intermediate.int_labour_costed group by 1").fetchall()
        )
        hours = con.execute("select hours, cost_rate from raw.timesheets order by source_line").fetchall()
        b10 = con.execute("select labour_cost from marts.fct_batch_costs where batch_id = 'B-10'").fetchall()
    finally:
        con.close()
    assert quarantined == []
    assert hours == [(Decimal(h), Decimal(r) if r else None) for *_, h, _, _, _, r in entries]
    # B-7: 720 + 960 + 480 + 1,040.22 + 260.06 + 500 (assumed) + 270; B-8: 480 + 180 (assumed) + 180 + 80;
    # unattributed: 2 x 80; B-10: 0.5 x 1,234.50.
    assert totals == {
        "B-7": Decimal("4230.28"),
        "B-8": Decimal("920.00"),
        "unattributed": Decimal("160.00"),
        "B-10": Decimal("617.25"),
    }
    assert b10 == [(Decimal("617.25"),)]


def test_unknown_task_and_bad_hours_are_quarantined_with_their_rule_and_no_values(tmp_path):
    lines = [
        HARVEST_HEADER,
        "2026-11-03,In,RL,B-7,Knitting,,2,2,No,No,Yes,Alice,Chen,,Yes,0,0,173.37,0,USD,",
        "2026-11-03,In,RL,B-7,Training runs,,two,2,No,No,Yes,Alice,Chen,,Yes,0,0,173.37,0,USD,",
        "2026-11-03,In,RL,B-7,Training runs,,-2,2,No,No,Yes,Alice,Chen,,Yes,0,0,173.37,0,USD,",
        "2026-11-03,In,RL,B-7,Training runs,,25,2,No,No,Yes,Alice,Chen,,Yes,0,0,173.37,0,USD,",
        "2026-11-03,In,RL,B-7,Training runs,,3,3,No,No,Yes,Alice,Chen,,Yes,0,0,17x.37,0,USD,",
        "2026-11-31,In,RL,B-7,Training runs,,3,3,No,No,Yes,Alice,Chen,,Yes,0,0,173.37,0,USD,",
        "2026-11-03,In,RL,B-7,Training runs,,3,3,No,No,Yes,Alice,Chen,,Yes,0,0,173.37,0,USD,",
        "2026-11-04,In,RL,B-7,Training runs,,1:30,1:30,No,No,Yes,Alice,Chen,,Yes,0,0,173.37,0,USD,",
    ]
    parsed, valid = parse_timesheet(write(tmp_path / "t.csv", "\n".join(lines) + "\n"))
    assert parsed.rows_in == 8 and len(valid) == 1
    assert [(r.line, r.rule) for r in parsed.rejections] == [
        (2, "labour_task"),
        (3, "hours.hours_of_a_day"),
        (4, "hours.hours_of_a_day"),
        (5, "hours.hours_of_a_day"),
        (6, "cost_rate.str_matches"),
        (7, "entry_date.warehouse_type"),
        (9, "hours.hours_of_a_day"),
    ]
    # Hours as Harvest's hh:mm time format writes them are refused as a form, not as too many hours.
    assert parsed.rejections[-1].message == (
        "column hours should hold a decimal number of hours from 0 to 24 such as 7.5 (not 7:30), at most 4 decimals"
    )
    for rejection in parsed.rejections:
        assert "Alice" not in rejection.message and "Chen" not in rejection.message
        assert CANARY not in rejection.message and "173" not in rejection.message


def test_a_person_s_day_over_24_hours_in_one_file_is_quarantined_entry_by_entry(tmp_path):
    """No entry is over 24 hours, but Alice's 3 November is 8 + 4 + 16 + 4 = 32: each of the four is quarantined (rule
    hours_of_a_person_day), none priced. Ben's 24 hours in two entries is a day; Alice's 4 November (20) is another day
    and Chloe Chen's 20 another person. Validated together with a second file (validate_files, one pass), the sum is
    per file: its 12 + 12 hours of Alice on 3 November are a day of their own (across files staging judges)."""

    def entry(day: str, hours: str, first: str = "Alice", last: str = "Chen") -> str:
        return f"2026-11-{day},In,RL,B-7,Training runs,,{hours},{hours},No,No,Yes,{first},{last},,Yes,0,0,120.00,0,USD,"

    one = [entry("03", "8"), entry("03", "4"), entry("03", "16"), entry("03", "4"), entry("04", "20")]
    one += [entry("03", "20", "Chloe"), entry("03", "12", "Ben", "Okafor"), entry("03", "12.0", "Ben", "Okafor")]
    two = [entry("03", "12"), entry("03", "12")]
    schema = timesheets(load_contract())
    parsed = [
        parse_file(write(tmp_path / name, "\n".join([HARVEST_HEADER, *lines]) + "\n"), harvest_line_parser())
        for name, lines in (("one.csv", one), ("two.csv", two))
    ]
    valid = validate_files(parsed, schema)

    assert [(r.line, r.rule) for r in parsed[0].rejections] == [
        (line, "hours_of_a_person_day") for line in (2, 3, 4, 5)
    ]
    assert list(valid[0]["source_line"]) == [6, 7, 8, 9]
    assert parsed[1].rejections == [] and list(valid[1]["source_line"]) == [2, 3]
    assert "Alice" not in parsed[0].rejections[0].message and "32" not in parsed[0].rejections[0].message


def test_a_person_s_day_is_one_day_however_the_file_writes_the_name(tmp_path):
    """Alice Zhang's 3 November in one file: 10 hours as "Alice Zhang", 8 as "alice" " zhang" (lower case, a space
    before), 6 as "ALICE" "Zhang" with a no-break space after it: 24, a day. A fourth entry, 4 hours as "Alice"
    "Zha\u0308ng" (an accent as a combining mark; Zhäng folds to Zhang as person_key folds it), makes 28: all four
    are quarantined (rule hours_of_a_person_day). Before, each spelling was a person of its own with 24 hours of its
    own, and the 28 hours were priced (3,360.00 at 120.00). Zoe Muller's 20 hours and 4 of Zoé Müller's are 24: a
    day."""

    def entry(hours: str, first: str, last: str) -> str:
        return f"2026-11-03,In,RL,B-7,Training runs,,{hours},{hours},No,No,Yes,{first},{last},,Yes,0,0,120.00,0,USD,"

    lines = [
        entry("10", "Alice", "Zhang"),
        entry("8", "alice", " zhang"),
        entry("6", "ALICE", "Zhang\u00a0"),
        entry("4", "Alice", "Zha\u0308ng"),
        entry("20", "Zoe", "Muller"),
        entry("4", "Zo\u00e9", "M\u00fcller"),
    ]
    path = write(tmp_path / "t.csv", "\n".join([HARVEST_HEADER, *lines]) + "\n")
    parsed = parse_file(path, harvest_line_parser())
    valid = validate_files([parsed], timesheets(load_contract()))[0]

    assert [(r.line, r.rule) for r in parsed.rejections] == [(line, "hours_of_a_person_day") for line in (2, 3, 4, 5)]
    assert list(valid["source_line"]) == [6, 7]
    assert parsed.rows_in == len(valid) + len(parsed.rejections)


def test_a_timesheet_without_a_required_column_is_rejected_whole(tmp_path):
    path = write(tmp_path / "t.csv", "Date,Task,Hours,First Name,Last Name\n2026-11-03,Training runs,2,A,B\n")
    parsed, valid = parse_timesheet(path)
    assert valid.empty and [(r.line, r.rule) for r in parsed.rejections] == [(0, "csv_header")]
    assert "Project Code" in parsed.rejections[0].message


def test_the_task_table_comes_from_the_contract():
    contract = load_contract()
    assert contract.labour_tasks["Rerun after failure"] == ("training_engineering", "rework")
    assert contract.labour_tasks["Data preparation"] == ("data_preparation", "build")
    rows = contract.enumeration_rows()
    roles = {r["code"]: r["category"] for r in rows if r["enumeration"] == "labour_task_role"}
    categories = {r["code"]: r["category"] for r in rows if r["enumeration"] == "labour_task_category"}
    assert roles == {t: rc[0] for t, rc in contract.labour_tasks.items()}
    assert categories == {t: rc[1] for t, rc in contract.labour_tasks.items()}
    assert {r["code"] for r in rows if r["enumeration"] == "service_stage"} == {"initial_delivery", "ongoing_support"}
    parameters = {r["name"]: r["value"] for r in contract.parameter_rows()}
    assert parameters["labour_assumed_rate.training_engineering.typical"] == 100.0
    assert parameters["pending_range_pct"] == 20.0
    # A new task in a contract version validates without code changes; a task naming an unknown role is refused.
    document = copy.deepcopy(contract.document)
    document["labour_tasks"]["Knitting"] = {"role": "platform_support", "category": "run"}
    assert "Knitting" in Contract("v1", document).labour_tasks
    document["labour_tasks"]["Knitting"] = {"role": "knitter", "category": "run"}
    with pytest.raises(ValueError, match="unknown role"):
        _ = Contract("v1", document).labour_tasks
    document = copy.deepcopy(contract.document)
    document["labour_assumed_rates"]["platform_support"] = {"low": 120, "typical": 90, "high": 110}
    with pytest.raises(ValueError, match="low <= typical <= high"):
        _ = Contract("v1", document).labour_assumed_rates


def _csv_rows(path: Path, schema):
    parsed = parse_file(path, sources()[schema.table].loader.parser(schema, None))
    return parsed, validate_rows(parsed, schema)


def test_service_invoices_accruals_need_a_service_month_and_an_invoice_number_is_its_vendor_s(tmp_path):
    path = write(
        tmp_path / "s.csv",
        "invoice_id,vendor,batch_id,stage,amount,currency,invoiced_on,service_month\n"
        "I-1,V,B-7,initial_delivery,2400.00,USD,2026-11-10,\n"
        "I-2,V,B-7,ongoing_support,600.00,USD,,2026-11\n"
        "I-3,V,B-7,ongoing_support,600.00,USD,,\n"
        "I-4,V,B-7,maintenance,600.00,USD,2026-11-10,\n"
        "I-5,V,B-7,initial_delivery,12.345,USD,2026-11-10,\n"
        "I-1,V,B-7,initial_delivery,2400.00,USD,2026-11-10,\n"
        "I-1,W,B-7,initial_delivery,7.00,USD,2026-11-10,\n",
    )
    parsed, valid = _csv_rows(path, service_invoices(load_contract()))
    # An invoice number is its vendor's: W's I-1 is another invoice, V's I-1 twice is one.
    assert list(zip(valid["vendor"], valid["invoice_id"], strict=True)) == [("V", "I-1"), ("V", "I-2"), ("W", "I-1")]
    assert [(r.line, r.rule, r.message) for r in parsed.rejections if r.line == 7] == [
        (7, "vendor+invoice_id.unique", "vendor and invoice_id repeat an earlier row")
    ]
    assert [(r.line, r.rule) for r in parsed.rejections] == [
        (4, "accrual_service_month"),
        (5, "stage.isin"),
        (6, "amount.str_matches"),
        (7, "vendor+invoice_id.unique"),
    ]


def test_a_service_month_or_invoice_date_after_the_night_is_no_cost_yet(tmp_path):
    """An accrual for 2099-01 is not a cost of today's batch (it added 700.00 to B-7's services): a service month
    after the night's month, or an invoice dated after the night, is quarantined. The night's own month accrues."""
    today = datetime.now(UTC).date()
    path = write(
        tmp_path / "invoices_2026-11.csv",
        "invoice_id,vendor,batch_id,stage,amount,currency,invoiced_on,service_month\n"
        "LC-2026-311,Labelcraft,B-7,initial_delivery,2400.00,USD,2026-11-10,\n"
        "LC-FUT,Labelcraft,B-7,ongoing_support,700.00,USD,,2099-01\n"
        f"LC-NOW,Labelcraft,B-7,ongoing_support,600.00,USD,,{today:%Y-%m}\n"
        "LC-FUT-DAY,Labelcraft,B-7,ongoing_support,700.00,USD,,2099-01-01\n"
        "LC-2099,Labelcraft,B-7,initial_delivery,700.00,USD,2099-01-05,\n"
        f"LC-TODAY,Labelcraft,B-7,initial_delivery,10.00,USD,{today:%Y-%m-%d},2026-11\n"
        "LC-BAD,Labelcraft,B-7,ongoing_support,700.00,USD,,2099-13\n",
    )
    parsed, valid = _csv_rows(path, service_invoices(load_contract()))
    assert list(valid["invoice_id"]) == ["LC-2026-311", "LC-NOW", "LC-TODAY"]
    assert [(r.line, r.rule) for r in parsed.rejections] == [
        (3, "service_month.after_night"),
        (5, "service_month.after_night"),
        (6, "invoiced_on.after_night"),
        (8, "service_month.str_matches"),  # not a month at all: the pattern's rule, not the night's
    ]
    assert parsed.rejections[0].message == (
        "column service_month should hold a month no later than the month of the night that reads the file (its "
        "clock, allowing 15 minutes of clock skew)"
    )


def test_a_registry_file_must_name_the_plan_columns_and_may_leave_them_blank(tmp_path):
    """A registry file without the plan columns read as a blank plan for every batch: delivered again so, it wiped
    every budget (B-8 over its boundary became not known). It is refused whole, naming the columns; a blank plan is
    written as empty values."""
    schema = batch_registry(load_contract())
    head = "batch_id,project,goal,team,data_version,model_version,code_version,config_version,contract_version"
    old = write(tmp_path / "old.csv", f"{head}\nB-1,p,g,t,d,m,c,f,v1\nB-2,p,g,t,d,m,c,f,v1\n")
    parsed, valid = _csv_rows(old, schema)
    assert valid.empty and parsed.rows_in == 2
    assert [(r.line, r.rule, r.message, r.records) for r in parsed.rejections] == [
        (
            0,
            "csv_header",
            "header lacks required column(s): budget_cost, budget_gpu_hours, max_trial_rounds, stop_condition, "
            "variance_boundary_pct; its 2 records were not loaded",
            2,
        )
    ]
    new = write(
        tmp_path / "new.csv",
        f"{head},budget_cost,budget_gpu_hours,max_trial_rounds,stop_condition,variance_boundary_pct\n"
        "B-1,p,g,t,d,m,c,f,v1,1000.00,80,3,two rounds without evidence,10\n"
        "B-2,p,g,t,d,m,c,f,v1,,,,,\n"
        'B-3,p,g,t,d,m,c,f,v1,"1,000",80,3,,10\n'
        "B-4,p,g,t,d,m,c,f,v1,1000.00,80,0,,10\n",
    )
    parsed, valid = _csv_rows(new, schema)
    assert list(valid["batch_id"]) == ["B-1", "B-2"]
    assert [(r.line, r.rule) for r in parsed.rejections] == [
        (4, "budget_cost.str_matches"),
        (5, "max_trial_rounds.greater_than"),
    ]


# ---- assets into a temporary DuckDB -------------------------------------------------------------------------------

ASSETS = {a.key.path[-1]: a for a in source_assets}


def _materialize(landing: Path, warehouse: Path, name: str, instance: dg.DagsterInstance):
    return dg.materialize(
        [ASSETS[name]],
        instance=instance,
        resources={"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))},
    )


def test_assets_load_conserve_rows_and_keep_names_and_rates_out_of_logs(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    write(
        landing / "timesheets" / "harvest_2026-11.csv",
        "\n".join(
            [
                HARVEST_HEADER,
                "2026-11-03,In,RL,B-7,Training runs,,2,2,No,No,Yes,Zoltan,Quibble,,Yes,0,0,173.37,346.74,USD,",
                "2026-11-03,In,RL,B-7,Knitting,,2,2,No,No,Yes,Zoltan,Quibble,,Yes,0,0,173.37,346.74,USD,",
                "2026-11-03,In,RL,B-7,Training runs,,2,2,No,No,Yes,Zoltan,Quibble,,Yes,0,0,173.37",
            ]
        )
        + "\n",
    )
    write(landing / "timesheets" / "broken.csv", "Date,Hours\n2026-11-03,2\n")
    write(
        landing / "services" / "invoices.csv",
        "invoice_id,vendor,batch_id,stage,amount,currency,invoiced_on,service_month\n"
        "I-1,V,B-7,initial_delivery,10.00,USD,,\nI-2,V,B-7,initial_delivery,10.00,USD,2026-11-02,\n",
    )
    write(
        landing / "registry" / "rounds.csv",
        "batch_id,round,started_at,ended_at,evidence\n"
        "B-7,1,2026-11-02T00:00:00,2026-11-03T00:00:00,found it\nB-7,0,2026-11-03T00:00:00,2026-11-04T00:00:00,\n",
    )
    instance = dg.DagsterInstance.ephemeral()
    logged = []
    for name in ("timesheets", "service_invoices", "batch_rounds"):
        result = _materialize(landing, warehouse, name, instance)
        assert result.success
        logged += [f"{e.user_message} {e.dagster_event or ''}" for e in instance.all_logs(result.run_id)]
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        ledger = con.execute(
            "select source, sum(rows_in), sum(rows_staged), sum(rows_quarantined) "
            "from raw.ingested_files group by source order by source"
        ).fetchall()
        quarantine = con.execute(
            "select source, source_file, line, rule from raw.quarantine order by source, source_file, line"
        ).fetchall()
        staged = con.execute("select task, hours, cost_rate from raw.timesheets").fetchall()
    finally:
        con.close()
    assert ledger == [("batch_rounds", 2, 1, 1), ("service_invoices", 2, 1, 1), ("timesheets", 4, 1, 3)]
    assert quarantine == [
        ("batch_rounds", "registry/rounds.csv", 3, "round.greater_than"),
        ("service_invoices", "services/invoices.csv", 2, "accrual_service_month"),
        ("timesheets", "timesheets/broken.csv", 0, "csv_header"),
        ("timesheets", "timesheets/harvest_2026-11.csv", 3, "labour_task"),
        ("timesheets", "timesheets/harvest_2026-11.csv", 4, "csv_field_count"),
    ]
    assert staged == [("Training runs", Decimal("2.0000"), Decimal("173.37"))]
    text = "\n".join(logged)
    assert "labour_task" in text  # the rule is reported ...
    for secret in ("Zoltan", "Quibble", "173.37", "346.74"):  # ... never a name or a rate
        assert secret not in text


# ---- the demo, by hand ----------------------------------------------------------------------------------------

# (batch, task, role, category, hours, rate or None) in file order; assumed rates from the contract:
# training_engineering 80 / 100 / 130, platform_support 70 / 90 / 110 (low / typical / high).
DEMO_ENTRIES = [
    ("B-7", "Data preparation", "data_preparation", "build", "6", "120.00"),
    ("B-7", "Training runs", "training_engineering", "run", "8", "120.00"),
    ("B-7", "Rerun after failure", "training_engineering", "rework", "4", "120.00"),
    ("B-7", "Training runs", "training_engineering", "run", "6", CANARY),
    ("B-7", "Rerun after failure", "training_engineering", "rework", "1.5", CANARY),
    ("B-7", "Training runs", "training_engineering", "run", "5", None),
    ("B-7", "Business evaluation", "business_evaluation", "run", "3", "90.00"),
    ("B-8", "Training runs", "training_engineering", "run", "4", "120.00"),
    ("B-8", "Cluster support", "platform_support", "run", "2", None),
    ("B-8", "Evaluation rework", "business_evaluation", "rework", "2", "90.00"),
    ("B-8", "Coordination", "project_coordination", "run", "1", "80.00"),
    ("unattributed", "Coordination", "project_coordination", "run", "2", "80.00"),
]
ASSUMED = {"training_engineering": ("80", "100", "130"), "platform_support": ("70", "90", "110")}


def _expected_entry(batch, task, role, category, hours, rate):
    h = Decimal(hours)
    if rate is not None:
        cost = cents(h * Decimal(rate))
        return (batch, task, role, category, h, Decimal(rate), cost, cost, cost, "measured")
    low, typical, high = (cents(h * Decimal(r)) for r in ASSUMED[role])
    return (batch, task, role, category, h, None, typical, low, high, "assumed")


def test_demo_labour_every_entry_by_hand(demo_run):
    rows = demo_run.query(
        "select batch_id, task, role, category, hours, cost_rate, labour_cost, labour_cost_low, "
        "labour_cost_high, evidence_level from intermediate.int_labour_costed order by source_line"
    )
    assert rows == [_expected_entry(*entry) for entry in DEMO_ENTRIES]
    # The canary's 1.5 hours: 260.055 rounds once, half up, to 260.06.
    assert rows[4][6] == Decimal("260.06")
    people = demo_run.query(
        "select batch_id, role, count(distinct person_key) from intermediate.int_labour_costed "
        "group by 1, 2 order by 1, 2"
    )
    assert ("B-7", "training_engineering", 3) in people and ("B-7", "business_evaluation", 1) in people
    months = demo_run.query("select distinct month_start, contract_version from intermediate.int_labour_costed")
    assert [(str(m), v) for m, v in months] == [("2026-11-01", "v1")]
    columns = {
        c
        for (c,) in demo_run.query(
            "select column_name from information_schema.columns where table_name = 'int_labour_costed'"
        )
    }
    assert not columns & {"first_name", "last_name", "notes"}


def test_demo_labour_per_batch_by_role_and_category(demo_run):
    rows = demo_run.query(
        "select batch_id, role, category, sum(hours), sum(labour_cost), sum(labour_cost_low), "
        "sum(labour_cost_high) from intermediate.int_labour_costed group by 1, 2, 3 order by 1, 2, 3"
    )
    expected: dict[tuple[str, str, str], list[Decimal]] = {}
    for entry in DEMO_ENTRIES:
        batch, _, role, category, hours, rate = entry
        _, _, _, _, h, _, cost, low, high, _ = _expected_entry(*entry)
        sums = expected.setdefault((batch, role, category), [Decimal(0)] * 4)
        for i, value in enumerate((h, cost, low, high)):
            sums[i] += value
    assert rows == [(*key, *values) for key, values in sorted(expected.items())]
    totals = dict(demo_run.query("select batch_id, sum(labour_cost) from intermediate.int_labour_costed group by 1"))
    # B-7: 720 + 960 + 480 + 1,040.22 + 260.06 + 500 (assumed) + 270; B-8: 480 + 180 (assumed) + 180 + 80.
    assert totals == {"B-7": Decimal("4230.28"), "B-8": Decimal("920.00"), "unattributed": Decimal("160.00")}
    rework = dict(
        demo_run.query(
            "select batch_id, sum(labour_cost) from intermediate.int_labour_costed where category = 'rework' group by 1"
        )
    )
    assert rework == {"B-7": Decimal("740.06"), "B-8": Decimal("180.00")}


def test_demo_services_by_stage(demo_run):
    rows = demo_run.query(
        "select batch_id, stage, cast(month_start as varchar), amount, amount_low, amount_high, "
        "evidence_level from intermediate.int_service_invoices_costed order by batch_id, stage"
    )
    assert rows == [
        ("B-7", "initial_delivery", "2026-11-01", Decimal("2400.00"), Decimal("2400.00"), Decimal("2400.00"), "billed"),
        # An accrual: 600.00 -+ 20 % (the contract's pending_range_pct).
        ("B-7", "ongoing_support", "2026-11-01", Decimal("600.00"), Decimal("480.00"), Decimal("720.00"), "pending"),
        ("B-8", "initial_delivery", "2026-11-01", Decimal("1500.00"), Decimal("1500.00"), Decimal("1500.00"), "billed"),
    ]


def test_demo_rounds_cost_rises_without_evidence_on_b8(demo_run):
    rows = demo_run.query(
        "select batch_id, round_number, jobs, occupied_gpu_hours, compute_cost, has_new_evidence, "
        "previous_round_cost, cost_rose, rounds_without_evidence_streak, "
        "rising_cost_without_evidence_streak from intermediate.int_batch_rounds_costed order by 1, 2"
    )
    b7_1 = job_cost(16)  # 1001
    b7_2 = job_cost(64) + job_cost(96) + job_cost(8) + job_cost(4)  # 1002, 1003, 1004, 1005
    b8_1 = job_cost(8)  # 2001
    b8_2 = job_cost(8) + job_cost(8)  # the sweep 2002_1 and 2002_2
    b8_3 = job_cost(128) + job_cost(8) + job_cost(8) + job_cost(4)  # 2003-2006; 2007 holds no GPU
    assert rows == [
        ("B-7", 1, 1, Decimal(16), b7_1, True, None, False, 0, 0),
        ("B-7", 2, 4, Decimal(172), b7_2, True, b7_1, True, 0, 0),
        ("B-8", 1, 1, Decimal(8), b8_1, True, None, False, 0, 0),
        ("B-8", 2, 2, Decimal(16), b8_2, False, b8_1, True, 1, 1),
        ("B-8", 3, 5, Decimal(148), b8_3, False, b8_2, True, 2, 2),
    ]
    # Every started B-8 job falls in one of its rounds: the rounds add up to the batch's compute cost.
    assert (
        b8_1 + b8_2 + b8_3
        == demo_run.row("select compute_cost from marts.fct_batch_compute where batch_id = 'B-8'")["compute_cost"]
    )


def test_demo_batch_plan(demo_run):
    rows = demo_run.query(
        "select batch_id, budget_cost, budget_gpu_hours, max_trial_rounds, variance_boundary_pct "
        "from staging.stg_registry__batches order by 1"
    )
    assert rows == [
        ("B-10", Decimal("100.00"), Decimal("32.00"), 1, Decimal("10.00")),
        ("B-7", Decimal("8000.00"), Decimal("250.00"), 3, Decimal("10.00")),
        ("B-8", Decimal("400.00"), Decimal("120.00"), 2, Decimal("5.00")),
    ]


def test_the_vendors_invoice_settles_the_accrual_of_its_batch_stage_and_month(tmp_path):
    """The demo accrues 600.00 of Labelcraft's November support for B-7 under finance's own reference
    (LC-ACCR-2026-11). Labelcraft's invoice for it arrives in December under its own number, dated with the service
    month: it replaces the accrual. Counting both gave B-7's services 3,640.00 instead of 3,040.00."""
    from cost_pipeline.cli import run_pipeline
    from cost_pipeline.demo import write_demo_landing
    from tests.helpers import query

    landing = write_demo_landing(tmp_path / "landing")
    (landing / "services" / "invoices_2026-12.csv").write_text(
        "invoice_id,vendor,batch_id,stage,amount,currency,invoiced_on,service_month\n"
        "LC-2026-340,Labelcraft,B-7,ongoing_support,640.00,USD,2026-12-02,2026-11\n",
        encoding="utf-8",
    )
    warehouse = tmp_path / "warehouse.duckdb"
    assert run_pipeline(landing, warehouse)
    # 2,400.00 (initial delivery, billed) + 640.00 (support, billed); nothing pending.
    assert query(warehouse, "select services_cost, pending_cost from marts.fct_batch_costs where batch_id = 'B-7'") == [
        (Decimal("3040.00"), Decimal("0.00"))
    ]
    assert query(
        warehouse,
        "select invoice_id, amount, evidence_level from intermediate.int_service_invoices_costed "
        "where batch_id = 'B-7' order by invoice_id",
    ) == [("LC-2026-311", Decimal("2400.00"), "billed"), ("LC-2026-340", Decimal("640.00"), "billed")]
    # The accrual stays in raw, where it came from.
    assert query(warehouse, "select count(*) from raw.service_invoices where invoice_id = 'LC-ACCR-2026-11'") == [(1,)]


def test_the_vendors_invoice_settles_the_accrual_whatever_case_it_writes_the_batch_in(tmp_path):
    """An invoice writing B-7 as b-7 is the registry's B-7 (resolve_batch): it settles finance's accrual for B-7's
    November support as B-7 does. Compared as written, both counted: B-7's services 3,000.00 -> 3,600.00, with
    600.00 pending."""
    from tests.helpers import staged_rows

    invoices = [
        "invoice_id,vendor,batch_id,stage,amount,currency,invoiced_on,service_month",
        "LC-ACCR-2026-11,Labelcraft,B-7,ongoing_support,600.00,USD,,2026-11",
        "LC-2026-340,Labelcraft,b-7,ongoing_support,600.00,USD,2026-11-28,",
    ]
    staged = staged_rows(
        tmp_path, "service_invoices", {"services/invoices_2026-11.csv": invoices}, "stg_services__invoices"
    )
    assert [(row["invoice_id"], row["batch_id"]) for row in staged] == [("LC-2026-340", "b-7")]


def test_the_vendors_invoice_settles_the_accrual_whatever_case_it_writes_the_vendor_in(tmp_path):
    """An invoice from LABELCRAFT is Labelcraft's: it settles finance's accrual for Labelcraft's November support of
    B-7, and shipped again as labelcraft's it is the same invoice, counted once. Compared as written, all three
    counted: B-7's services 600.00 -> 1,800.00. In one file, the two spellings are one vendor naming one invoice
    twice (rule vendor+invoice_id.unique)."""
    from tests.helpers import staged_rows

    header = "invoice_id,vendor,batch_id,stage,amount,currency,invoiced_on,service_month"
    staged = staged_rows(
        tmp_path / "again",
        "service_invoices",
        {
            "services/invoices_2026-11.csv": [
                header,
                "LC-ACCR-2026-11,Labelcraft,B-7,ongoing_support,600.00,USD,,2026-11",
                "LC-2026-340,LABELCRAFT,B-7,ongoing_support,600.00,USD,2026-11-28,",
            ],
            "services/invoices_2026-11_again.csv": [
                header,
                "LC-2026-340,labelcraft,B-7,ongoing_support,600.00,USD,2026-11-28,",
            ],
        },
        "stg_services__invoices",
    )
    assert [(row["invoice_id"], row["vendor"]) for row in staged] == [("LC-2026-340", "labelcraft")]
    one_file = staged_rows(
        tmp_path / "one_file",
        "service_invoices",
        {
            "services/invoices_2026-11.csv": [
                header,
                "LC-2026-340,LABELCRAFT,B-7,ongoing_support,600.00,USD,2026-11-28,",
                "LC-2026-340,Labelcraft,B-7,ongoing_support,600.00,USD,2026-11-28,",
            ]
        },
        "stg_services__invoices",
    )
    assert [(row["vendor"], row["source_line"]) for row in one_file] == [("LABELCRAFT", 2)]
