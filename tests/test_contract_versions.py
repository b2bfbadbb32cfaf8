"""A contract change is a new version file; each batch keeps the version it was registered with, and both
versions are computed side by side in the same marts (R3, R16)."""

from __future__ import annotations

import shutil
from decimal import Decimal
from importlib import resources

import duckdb

from cost_pipeline.cli import run_pipeline
from cost_pipeline.contract import add_contract_directory, available_versions, remove_contract_directory


def test_two_contract_versions_side_by_side(demo_run, tmp_path):
    v1 = resources.files("cost_pipeline.contract").joinpath("definitions_v1.yaml").read_text(encoding="utf-8")
    # v2 raises the bar for effective compute: graphics-engine activity of at least 0.9 (the demo computes at 0.85).
    v2 = v1.replace("version: v1", "version: v2", 1).replace(
        "min_gr_engine_active: 0.2 ", "min_gr_engine_active: 0.9 ", 1
    )
    assert v2.count("0.9 ") >= 1 and v2 != v1
    contracts = tmp_path / "contracts"
    contracts.mkdir()
    (contracts / "definitions_v2.yaml").write_text(v2, encoding="utf-8")

    landing = tmp_path / "landing"
    shutil.copytree(demo_run.landing, landing)
    registry = landing / "registry" / "batches.csv"
    lines = registry.read_text(encoding="utf-8").splitlines()
    lines = [line[: line.rindex(",")] + ",v2" if line.startswith("B-8,") else line for line in lines]
    registry.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # A later registry export names v2 for B-7 too: B-7 keeps v1, the version it was registered with.
    later = [line[: line.rindex(",")] + ",v2" if line.startswith("B-7,") else line for line in lines]
    (landing / "registry" / "batches_2026-12.csv").write_text("\n".join(later) + "\n", encoding="utf-8")

    add_contract_directory(contracts)
    try:
        assert available_versions() == ["v1", "v2"]
        warehouse = tmp_path / "warehouse.duckdb"
        assert run_pipeline(landing, warehouse)
    finally:
        remove_contract_directory(contracts)

    con = duckdb.connect(str(warehouse), read_only=True)
    rows = {
        r[0]: r[1:]
        for r in con.execute(
            "select batch_id, contract_version, effective_compute_gpu_hours, comm_wait_gpu_hours, idle_gpu_hours "
            "from marts.fct_batch_compute"
        ).fetchall()
    }
    versions = con.execute("select distinct contract_version from raw.contract_enumerations order by 1").fetchall()
    con.close()
    assert versions == [("v1",), ("v2",)]
    # B-7 keeps v1 (its first registration): the hand-computed figures of tests/test_end_to_end.py.
    assert rows["B-7"] == ("v1", Decimal("152.7000"), Decimal("16.9667"), Decimal("17.3333"))
    # B-8 under v2: its effective minutes (8,712) become idle; comm wait is unchanged.
    assert rows["B-8"] == ("v2", Decimal("0.0000"), Decimal("16.1333"), Decimal("155.8667"))
    assert rows["unattributed"][0] == "v2"  # rows without a batch use the newest contract
