"""The dbt macros for a price per unit and a share of a cost (dbt_project/macros/cents_per_unit.sql), rendered as dbt
renders them for DuckDB and run on DuckDB: rounded half away from zero, exactly, where a double division rounds first
(8,560.05 over 160 tasks is 53.5003125: 53.500313, which the double 53.50031249999999 rounded to 53.500312; half of
1.15 is 0.575: 0.58, which the double 0.57499999999999996 rounded to 0.57)."""

from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import jinja2

from cost_pipeline.duckdb_session import connect

MACRO = Path(__file__).resolve().parents[1] / "dbt_project" / "macros" / "cents_per_unit.sql"


def _macros():
    """The macro file as a module on DuckDB: `adapter.dispatch` picks duckdb__ implementations, as dbt-duckdb does."""
    module = None

    class Adapter:
        @staticmethod
        def dispatch(name: str, namespace: str):
            return getattr(module, f"duckdb__{name}")

    template = jinja2.Environment().from_string(MACRO.read_text(encoding="utf-8"))
    module = template.make_module({"adapter": Adapter(), "return": lambda value: value})
    return module


def price_sql(cents: str, units: str, scale: int = 6) -> str:
    return str(_macros().cents_per_unit(cents, units, scale)).strip()


def share_sql(amount: str, part: str, whole: str, scale: int = 2) -> str:
    return str(_macros().money_share(amount, part, whole, scale)).strip()


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


def _share(amount: Decimal, part: Decimal, whole: Decimal, scale: int) -> Decimal:
    exact = abs(amount) * part / whole
    rounded = exact.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    return -rounded if amount < 0 else rounded


def test_a_share_of_whole_gpu_seconds_is_exact_and_a_fractional_one_is_the_double_rounded():
    rng = random.Random(20261202)
    whole_cases = [
        ("1.15", 1, 2),
        ("-1.15", 1, 2),
        ("0.05", 1, 2),
        ("2.01", 5, 2),
        ("0.00", 3, 7),
        ("1000000.01", 1, 1),
    ]
    whole_cases += [
        (str(Decimal(rng.randint(-(10**10), 10**10)).scaleb(-2)), part, part + rng.randint(0, 10**6))
        for part in (rng.randint(0, 10**8) for _ in range(2000))
    ]
    con = connect()
    con.execute("create table shares (amount decimal(18, 2), part double, whole bigint)")
    con.executemany("insert into shares values (?, ?, ?)", whole_cases)
    for scale in (2, 4):
        rows = con.execute(f"select amount, part, whole, {share_sql('amount', 'part', 'whole', scale)} from shares")
        wrong = [
            (amount, part, whole, share)
            for amount, part, whole, share in rows.fetchall()
            if share != _share(amount, Decimal(int(part)), Decimal(whole), scale)
        ]
        assert not wrong, (scale, wrong[:5])
    assert con.execute(f"select {share_sql('1.15::decimal(18, 2)', '1', '2')}").fetchone()[0] == Decimal("0.58")
    assert con.execute("select round(1.15::decimal(18, 2) * 1 / 2, 2)").fetchone()[0] == 0.57  # what it replaces
    # A fractional part (a MIG slice's GPU-seconds) is the double quotient, rounded as before.
    (fractional,) = con.execute(f"select {share_sql('100.00::decimal(18, 2)', '1.5', '7')}").fetchone()
    assert fractional == Decimal("21.43")
    # Beyond a bigint's reach the exact path is not taken: no overflow error, the double's figure (to its precision).
    (large,) = con.execute(f"select {share_sql('9999999999999999.99::decimal(18, 2)', '3000', '7000')}").fetchone()
    assert abs(large - Decimal("9999999999999999.99") * 3000 / 7000) < 1
