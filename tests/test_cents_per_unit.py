"""The dbt macro for a price per unit (dbt_project/macros/cents_per_unit.sql), rendered as dbt renders it for DuckDB
and run on DuckDB: to the millionth, rounded half away from zero, exactly, where a double division rounds first
(8,560.05 over 160 tasks is 53.5003125: 53.500313, which the double 53.50031249999999 rounded to 53.500312)."""

from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import jinja2

from cost_pipeline.duckdb_session import connect

MACRO = Path(__file__).resolve().parents[1] / "dbt_project" / "macros" / "cents_per_unit.sql"


def price_sql(cents: str, units: str, scale: int = 6) -> str:
    """The macro's SQL on DuckDB: `adapter.dispatch` picks the duckdb__ implementation, as dbt-duckdb does."""
    module = None

    class Adapter:
        @staticmethod
        def dispatch(name: str, namespace: str):
            return getattr(module, f"duckdb__{name}")

    template = jinja2.Environment().from_string(MACRO.read_text(encoding="utf-8"))
    module = template.make_module({"adapter": Adapter(), "return": lambda value: value})
    return str(module.cents_per_unit(cents, units, scale)).strip()


def expected(cents: int, units: int, scale: int = 6) -> Decimal:
    exact = Decimal(abs(cents)) / 100 / Decimal(units)
    rounded = exact.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    return -rounded if cents < 0 else rounded


def test_a_price_is_the_exact_quotient_rounded_half_away_from_zero():
    rng = random.Random(20261201)
    cases = [(856005, 160), (-856005, 160), (1, 3), (2, 3), (5, 8), (0, 7), (10**13 + 5, 2), (125, 200000)]
    cases += [(rng.randint(-(10**12), 10**12), rng.randint(1, 10**7)) for _ in range(2000)]
    con = connect()
    con.execute("create table prices (cents bigint, units bigint)")
    con.executemany("insert into prices values (?, ?)", cases)
    rows = con.execute(f"select cents, units, {price_sql('cents', 'units')} from prices").fetchall()
    wrong = [(cents, units, price) for cents, units, price in rows if price != expected(cents, units)]
    assert not wrong, wrong[:5]
    assert con.execute(f"select {price_sql('856005', '160')}").fetchone()[0] == Decimal("53.500313")
    for scale in (2, 4):
        rows = con.execute(f"select cents, units, {price_sql('cents', 'units', scale)} from prices").fetchall()
        wrong = [(cents, units, price) for cents, units, price in rows if price != expected(cents, units, scale)]
        assert not wrong, (scale, wrong[:5])
