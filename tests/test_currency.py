"""Amounts are added up in one currency, the contract's reporting_currency: a line in another is quarantined with
its file, line and rule, never summed with the rest (there are no exchange rates to convert it with)."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import yaml

from cost_pipeline.contract import available_versions, load_contract
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_source, sources
from cost_pipeline.ingest.timesheets import currency_code
from tests.helpers import query


def _load(tmp_path: Path, relative: str, text: str, source: str) -> list[tuple]:
    landing = tmp_path / "landing"
    (landing / relative).parent.mkdir(parents=True, exist_ok=True)
    (landing / relative).write_text(text, encoding="utf-8")
    warehouse = tmp_path / "w.duckdb"
    con = connect(warehouse, readable_dir=landing)
    try:
        load_source(con, landing, sources()[source], load_contract())
    finally:
        con.close()
    return query(warehouse, "select source_file, line, rule from raw.quarantine order by line")


def test_the_demo_contract_reports_in_us_dollars():
    assert load_contract().reporting_currency == "USD"


def test_a_purchase_in_another_currency_is_quarantined(tmp_path):
    header = (
        "purchase_id,purchased_on,asset_class,description,quantity,unit_price,currency,gpus_per_unit,"
        "depreciation_years,salvage_value\n"
    )
    text = header + (
        "P-1,2026-01-01,gpu_server,s,2,100.00,USD,8,3,0.00\nP-2,2026-01-01,gpu_server,s,2,100.00,EUR,8,3,0.00\n"
    )
    assert _load(tmp_path, "ledger/purchases.csv", text, "ledger_purchases") == [
        ("ledger/purchases.csv", 3, "currency.reporting_currency")
    ]


def test_a_focus_line_billed_in_another_currency_or_none_is_quarantined(tmp_path):
    """FOCUS requires BillingCurrency on every line: a blank one is a currency unknown, quarantined, never assumed
    to be the reporting currency (it was read as USD). An export without the column states none and is read in the
    reporting currency (the FinOps Foundation's samples omit it)."""
    header = "ChargePeriodStart,ChargePeriodEnd,BilledCost,EffectiveCost,BillingCurrency\n"
    text = header + (
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,1.00,1.00,USD\n"
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,1.00,1.00,EUR\n"
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,1.00,1.00,\n"
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,1.00,1.00,NULL\n"
    )
    assert _load(tmp_path, "billing/focus.csv", text, "billing_focus") == [
        ("billing/focus.csv", 3, "billing_currency.reporting_currency"),
        ("billing/focus.csv", 4, "billing_currency.not_nullable"),
        ("billing/focus.csv", 5, "billing_currency.not_nullable"),
    ]
    without = "ChargePeriodStart,ChargePeriodEnd,BilledCost,EffectiveCost\n2026-11-01T00:00:00Z,2026-11-02,1.00,1.00\n"
    assert _load(tmp_path / "without", "billing/focus.csv", without, "billing_focus") == []


def test_harvest_writes_a_currency_as_its_name_and_code():
    assert currency_code("United States Dollar - USD") == "USD"
    assert currency_code("Euro - EUR") == "EUR"
    assert currency_code("USD") == "USD"
    assert currency_code(None) is None


def test_a_timesheet_entry_in_another_currency_is_quarantined(tmp_path):
    header = "Date,Project Code,Task,Hours,First Name,Last Name,Cost Rate,Currency\n"
    text = header + (
        "2026-11-02,B-7,Data preparation,6,Ann,Lee,100.00,United States Dollar - USD\n"
        "2026-11-02,B-7,Data preparation,6,Ann,Lee,100.00,Euro - EUR\n"
    )
    assert _load(tmp_path, "timesheets/harvest.csv", text, "timesheets") == [
        ("timesheets/harvest.csv", 3, "currency.reporting_currency")
    ]


def test_a_timesheet_rate_whose_currency_is_blank_is_quarantined_not_assumed(tmp_path):
    # Line 2 has a rate and a blank Currency: its currency is unknown, so it is quarantined like a purchase,
    # facility cost or invoice with a blank currency. Line 3 has no rate (costed at the contract's assumed rate):
    # a blank Currency says nothing about money there. A file without the column is read in the reporting
    # currency (tests/test_labour_services.py).
    header = "Date,Project Code,Task,Hours,First Name,Last Name,Cost Rate,Currency\n"
    text = header + (
        "2026-11-02,B-7,Data preparation,6,Ann,Lee,100.00,\n"
        "2026-11-02,B-7,Data preparation,6,Ann,Lee,,\n"
        "2026-11-02,B-7,Data preparation,6,Ann,Lee,100.00,United States Dollar - USD\n"
    )
    assert _load(tmp_path, "timesheets/harvest.csv", text, "timesheets") == [
        ("timesheets/harvest.csv", 2, "currency.not_nullable")
    ]
    assert query(tmp_path / "w.duckdb", "select cost_rate, currency from raw.timesheets order by source_line") == [
        (None, None),
        (Decimal("100.00"), "USD"),
    ]


def test_a_ledger_or_invoice_line_whose_currency_is_blank_is_quarantined(tmp_path):
    text = "month,item,amount,currency\n2026-11,rent,10.00,USD\n2026-11,rent,10.00,\n2026-11,rent,10.00, \n"
    assert _load(tmp_path / "f", "ledger/facility.csv", text, "ledger_facility") == [
        ("ledger/facility.csv", 3, "currency.not_nullable"),
        ("ledger/facility.csv", 4, "currency.not_nullable"),
    ]
    text = (
        "invoice_id,vendor,batch_id,stage,amount,currency,invoiced_on,service_month\n"
        "I-1,V,B-7,initial_delivery,5.00,,2026-11-02,\n"
    )
    assert _load(tmp_path / "i", "services/invoices.csv", text, "service_invoices") == [
        ("services/invoices.csv", 2, "currency.not_nullable")
    ]


# ------------------------------------------------------------------------ the money marts say their currency
MARTS_DIR = Path(__file__).parents[1] / "dbt_project" / "models" / "marts"


def _mart_columns() -> dict[str, dict[str, str]]:
    """mart -> column -> data type, from the marts' yml."""
    marts = {}
    for path in MARTS_DIR.rglob("_*__models.yml"):
        for model in yaml.safe_load(path.read_text(encoding="utf-8"))["models"]:
            marts[model["name"]] = {c["name"]: str(c.get("data_type", "")) for c in model.get("columns", [])}
    return marts


def _is_money(column: str, data_type: str) -> bool:
    return (
        data_type.startswith("decimal")
        and re.search(r"cost|amount|price|debit|credit|bill|saving|variance(?!_pct)", column) is not None
    )


def test_the_currency_dbt_writes_is_the_contracts():
    project = yaml.safe_load((MARTS_DIR.parents[1] / "dbt_project.yml").read_text(encoding="utf-8"))
    assert {load_contract(v).reporting_currency for v in available_versions()} == {
        project["vars"]["reporting_currency"]
    }


def test_every_money_mart_has_a_currency_column_and_no_other_mart_does(demo_run):
    marts = _mart_columns()
    money = {name for name, columns in marts.items() if any(_is_money(c, t) for c, t in columns.items())}
    assert {"fct_batch_costs", "fct_cost_lines", "fct_service_month", "fct_storage_governance"} <= money
    assert {name for name, columns in marts.items() if "currency" in columns} == money
    assert not {"dim_batches", "fct_step_discards"} & money
    for name in sorted(money):
        assert marts[name]["currency"] == "string"
        assert demo_run.query(f"select distinct currency from marts.{name}") in ([("USD",)], []), name
    assert demo_run.query("select count(*) from marts.fct_batch_costs where currency = 'USD'") == [(4,)]
