"""The dbt macro that shares cents by largest remainder, run on DuckDB over 1,000 random bills.

The macro is pure Jinja + SQL, so it is rendered here directly and executed on generated bills
(0 to 1e9 dollars, 1-500 weights, zeros included): parts add up to the bill to the cent, none is negative.
"""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import jinja2
import pandas as pd

MACRO = Path(__file__).resolve().parents[1] / "dbt_project" / "macros" / "largest_remainder_cents.sql"


def allocation_sql() -> str:
    module = jinja2.Environment().from_string(MACRO.read_text(encoding="utf-8")).module
    return str(module.largest_remainder_cents("parts", ["bill_id"], "total_cents", "weight", "part_id"))


def test_parts_add_up_to_every_bill_and_none_is_negative():
    rng = random.Random(20261130)
    rows = []
    for bill_id in range(1000):
        total_cents = rng.choice([0, 1, 99, rng.randint(0, 10**11)])  # up to 1e9 dollars
        weights = [rng.choice([0, 0, 1, rng.randint(1, 10**6), rng.random() * 1e9]) for _ in range(rng.randint(1, 500))]
        if rng.random() < 0.05:
            weights = [0] * len(weights)  # all zero: equal shares
        rows.extend((bill_id, part_id, total_cents, float(w)) for part_id, w in enumerate(weights))
    con = duckdb.connect()
    frame = pd.DataFrame(rows, columns=["bill_id", "part_id", "total_cents", "weight"])
    con.register("generated", frame)
    con.execute(
        "create table parts as select cast(bill_id as integer) as bill_id, "
        "cast(part_id as integer) as part_id, cast(total_cents as bigint) as total_cents, "
        "cast(weight as double) as weight from generated"
    )
    result = con.execute(f"""
        with allocated as ({allocation_sql()})
        select bill_id, max(total_cents), sum(allocated_cents), min(allocated_cents), count(*)
        from allocated group by bill_id
    """).fetchall()
    con.close()
    assert len(result) == 1000
    for bill_id, total, allocated, smallest, _parts in result:
        assert allocated == total, bill_id
        assert smallest >= 0, bill_id


def test_equal_weights_share_the_odd_cent_deterministically():
    con = duckdb.connect()
    con.execute(
        "create table parts as select 1 as bill_id, part_id, 10000 as total_cents, 1.0 as weight "
        "from range(3) as t(part_id)"
    )
    shares = con.execute(f"select part_id, allocated_cents from ({allocation_sql()}) order by part_id").fetchall()
    con.close()
    assert shares == [(0, 3334), (1, 3333), (2, 3333)]
