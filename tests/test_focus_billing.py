"""Real FOCUS exports written by others (tests/data/focus, origin and licence in its README) load unedited: every line staged or quarantined with a
rule, the batch key read from Tags."""

from __future__ import annotations

import csv
import shutil
from decimal import Decimal
from pathlib import Path

import dagster as dg
import duckdb

from cost_pipeline.defs.ingest import ASSETS_BY_TABLE
from cost_pipeline.defs.resources import LandingZone, Warehouse

SHARED_DATA = Path(__file__).resolve().parent / "data" / "focus"


def _landing(tmp_path: Path) -> Path:
    files = sorted(SHARED_DATA.rglob("*.csv"))
    assert len(files) >= 13, f"expected the shared FOCUS exports in {SHARED_DATA}"
    landing = tmp_path / "landing"
    (landing / "billing").mkdir(parents=True)
    for path in files:
        shutil.copyfile(path, landing / "billing" / f"{path.parent.name}__{path.name}")
    return landing


def _materialize(landing: Path, warehouse: Path, tag_key: str = "batch_id") -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [ASSETS_BY_TABLE["billing_focus"]], instance=dg.DagsterInstance.ephemeral(),
        resources={"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))},
        run_config={"ops": {"raw__billing_focus": {"config": {"batch_tag_key": tag_key}}}})


def test_shared_focus_exports_load_unedited(tmp_path):
    landing, warehouse = _landing(tmp_path), tmp_path / "w.duckdb"
    assert _materialize(landing, warehouse).success
    con = duckdb.connect(str(warehouse), read_only=True)
    ledger = con.execute("select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files "
                         "where source = 'billing_focus'").fetchall()
    quarantined = con.execute("select source_file, line, rule from raw.quarantine order by 1, 2").fetchall()
    totals = con.execute("select sum(billed_cost), sum(effective_cost), count(*) from raw.billing_focus "
                         "where source_file like 'billing/openchargeback__aws%'").fetchone()
    nulls = con.execute("select count(*) from raw.billing_focus where consumed_quantity is null").fetchone()[0]
    con.close()
    assert len(ledger) == 13
    assert all(rows_in == staged + bad for _, rows_in, staged, bad in ledger)
    # The FOCUS specification's own examples carry an impossible hour ("2023-02-01T30:00:00Z"): quarantined.
    assert quarantined == [
        ("billing/focus_spec__commitment_discount_purchase_scenario_2.csv", 4, "charge_period_end.coerce_dtype"),
        ("billing/focus_spec__commitment_discount_purchase_scenario_3.csv", 5, "charge_period_end.coerce_dtype"),
    ]
    with (SHARED_DATA / "openchargeback" / "aws_2025-01.csv").open(newline="", encoding="utf-8") as handle:
        lines = list(csv.DictReader(handle))
    assert totals == (sum(Decimal(r["BilledCost"]) for r in lines), sum(Decimal(r["EffectiveCost"]) for r in lines),
                      len(lines))
    assert nulls > 0                                  # "null" quantities are missing values, not errors


def test_the_batch_key_comes_from_a_configured_tag(tmp_path):
    landing, warehouse = _landing(tmp_path), tmp_path / "w.duckdb"
    assert _materialize(landing, warehouse, tag_key="project_id").success
    con = duckdb.connect(str(warehouse), read_only=True)
    keys = {k for (k,) in con.execute("select distinct batch_id from raw.billing_focus "
                                      "where source_file like 'billing/openchargeback%'").fetchall()}
    con.close()
    assert "genomics-sequencing" in keys and None not in keys


def test_a_parquet_export_loads_like_its_csv(tmp_path):
    """The same FOCUS export as Parquet (Tags a JSON text column) stages the same lines, batch keys and amounts."""
    source = SHARED_DATA / "openchargeback" / "aws_2025-01.csv"
    landing = tmp_path / "landing"
    (landing / "billing").mkdir(parents=True)
    con = duckdb.connect()
    con.execute("copy (select * from read_csv(?, header = true, all_varchar = true)) to ? (format parquet)",
                [str(source), str(landing / "billing" / "aws_2025-01.parquet")])
    con.close()
    shutil.copyfile(source, landing / "billing" / "aws_2025-01.csv")
    warehouse = tmp_path / "w.duckdb"
    assert _materialize(landing, warehouse, tag_key="project_id").success
    con = duckdb.connect(str(warehouse), read_only=True)
    staged = {path: rows for path, rows in con.execute(
        "select source_file, list(struct_pack(source_line, batch_id, billed_cost, effective_cost, resource_id) "
        "order by source_line) from raw.billing_focus group by source_file").fetchall()}
    ledger = con.execute("select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files "
                         "order by 1").fetchall()
    con.close()
    csv_rows, parquet_rows = staged["billing/aws_2025-01.csv"], staged["billing/aws_2025-01.parquet"]
    # A CSV's line 1 is its header: its data lines are numbered from 2, the Parquet rows from 1.
    assert [dict(r, source_line=r["source_line"] - 1) for r in csv_rows] == parquet_rows
    assert {r["batch_id"] for r in parquet_rows} >= {"genomics-sequencing"}
    assert [(rows_in, staged_, bad) for _, rows_in, staged_, bad in ledger] == [(len(csv_rows), len(csv_rows), 0)] * 2
