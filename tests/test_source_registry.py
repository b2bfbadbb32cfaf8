"""The source registry is the one description of every landing source: the docs' inputs table, the dbt sources and
the loaders all agree with it, and a source's options reach its loader as run config."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml

from cost_pipeline import docgen
from cost_pipeline.contract import load_contract
from cost_pipeline.defs.ingest import ASSETS_BY_TABLE
from cost_pipeline.defs.resources import LandingZone, Warehouse
from cost_pipeline.demo import write_demo_landing
from cost_pipeline.ingest.lib.records import parse_file
from cost_pipeline.ingest.lib.source import RowLoader
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import SOURCES, load_source, raw_tables, render_inputs
from tests.helpers import query

RAW_SOURCES_YML = docgen.REPO_ROOT / "dbt_project" / "models" / "staging" / "_raw__sources.yml"


def test_the_docs_inputs_table_is_the_registry_rendered():
    assert docgen.BLOCKS["inputs"].render is render_inputs
    assert "inputs" not in docgen.stale_blocks(), (
        "docs/inputs.md is out of date with the source registry: run `cost-pipeline docs`"
    )
    for name in SOURCES:
        assert f"`raw.{name}`" in render_inputs()


def test_the_dbt_raw_sources_are_the_registry_tables_with_its_descriptions():
    document = yaml.safe_load(RAW_SOURCES_YML.read_text(encoding="utf-8"))
    (raw,) = [s for s in document["sources"] if s["name"] == "raw"]
    in_yml = [(t["name"], t.get("description")) for t in raw["tables"]]
    expected = list(raw_tables().items())
    assert in_yml == expected, (
        f"{RAW_SOURCES_YML.name} must list the registry's raw tables in its order, each described by its summary; "
        "expected:\n" + "\n".join(f"      - name: {n}\n        description: {d}" for n, d in expected)
    )


def test_a_source_reads_parquet_exactly_when_a_pattern_admits_it():
    for source in SOURCES.values():
        admits = any(p.endswith(".parquet") for p in source.patterns)
        assert admits == source.loader.reads_parquet(), source.name
        assert ("Parquet" in source.formats()) == admits, source.name
        assert source.requirements[0].startswith("I"), f"{source.name}: the DOMAIN input comes first"


# Sources the demo night does not write: the tools' own telemetry formats, loaded from real public samples in
# tests/test_telemetry_formats.py (the demo writes the wide format, so its figures stay as they were).
NOT_IN_DEMO = {"device_samples_dcgm", "device_samples_prometheus"}


def test_every_demo_file_belongs_to_one_source_and_is_the_file_its_loader_reads(tmp_path):
    landing = write_demo_landing(tmp_path / "landing")
    claimed: dict[str, list[str]] = {}
    for name, source in SOURCES.items():
        files = source.files(landing)
        if name in NOT_IN_DEMO:
            assert not files, f"{name} is in the demo now: drop it from NOT_IN_DEMO"
            continue
        assert files, f"the demo landing has no file for {name} ({source.files_text()})"
        for path in files:
            claimed.setdefault(path.relative_to(landing).as_posix(), []).append(name)
    every = {p.relative_to(landing).as_posix() for p in landing.rglob("*") if p.is_file()}
    # S3 Inventory manifests are read beside the data files they list, never as rows of their own.
    unclaimed = {f for f in every - set(claimed) if not Path(f).name.endswith("manifest.json")}
    assert not unclaimed, f"no source reads {sorted(unclaimed)}"
    assert {f: names for f, names in claimed.items() if len(names) > 1} == {}

    warehouse = tmp_path / "w.duckdb"
    con = connect(warehouse, readable_dir=landing)
    try:
        contract = load_contract()
        reports = {name: load_source(con, landing, source, contract) for name, source in SOURCES.items()}
    finally:
        con.close()
    assert all(report.conserved for report in reports.values())
    assert all(report.rows_staged > 0 for name, report in reports.items() if name not in NOT_IN_DEMO)
    ledger = query(warehouse, "select source, source_file from raw.ingested_files")
    assert sorted(ledger) == sorted((names[0], f) for f, names in claimed.items())


def test_launch_options_are_the_asset_run_config(tmp_path):
    fields = ["JobID", "State", "Start", "End", "Timelimit", "ReqTRES", "AllocTRES", "Comment"]
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "scheduler").mkdir(parents=True)
    (landing / "scheduler" / "dump.txt").write_text(
        "42;COMPLETED;2026-11-03T00:00:00;2026-11-03T01:00:00;01:00:00;gres/gpu=2;gres/gpu=2;batch=B-7\n",
        encoding="utf-8",
    )
    result = dg.materialize(
        [ASSETS_BY_TABLE["scheduler_jobs"]],
        instance=dg.DagsterInstance.ephemeral(),
        resources={"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))},
        run_config={"ops": {"raw__scheduler_jobs": {"config": {"sacct_delimiter": ";", "sacct_fields": fields}}}},
    )
    assert result.success
    assert query(warehouse, "select job_id, batch_id, gpus_allocated from raw.scheduler_jobs") == [("42", "B-7", 2)]
    for name, source in SOURCES.items():
        schema = ASSETS_BY_TABLE[name].op.config_schema
        names = set(getattr(schema.config_type, "fields", {}))
        assert names == set(source.option_names()), name


# The sources read by the shared CSV reader in their documented shape (the loader's csv_columns): every column the
# contract declares is in the header; a value the contract lets be blank is an empty field.
DOCUMENTED_CSV = {
    "batch_registry",
    "batch_rounds",
    "ledger_purchases",
    "ledger_facility",
    "service_invoices",
    "serving_replicas",
    "serving_monthly_costs",
    "task_outcomes",
    "storage_prefix_rules",
    "storage_prices",
}


def test_a_documented_csv_whose_header_lacks_a_contract_column_is_refused_whole(tmp_path):
    """A missing column read as blank in every row, and a blank says something (a replica's price: owned; a batch's
    plan: none): a re-export without it replaced what the older file said. Every column, those that may be blank
    too, must be in the header; else the file is quarantined whole (``csv_header``), naming it, and its lines count
    as quarantined."""
    contract = load_contract()
    for name in sorted(DOCUMENTED_CSV):
        source = SOURCES[name]
        schema = source.loader.schema(contract)
        parser = source.loader.parser(schema, source.default_options())
        columns = [c.name for c in schema.columns]
        for column in columns:
            kept = [c for c in columns if c != column]
            path = tmp_path / name / f"without_{column}.csv"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(",".join(line) + "\n" for line in (kept, ["x"] * len(kept), ["y"] * len(kept))))
            parsed = parse_file(path, parser)
            assert (parsed.rows, parsed.rows_in) == ([], 2), (name, column)
            assert [(r.line, r.rule, r.records) for r in parsed.rejections] == [(0, "csv_header", 2)], (name, column)
            assert parsed.rejections[0].message.startswith(f"header lacks required column(s): {column};")
    shared_reader = {
        name
        for name, source in SOURCES.items()
        if isinstance(source.loader, RowLoader) and getattr(source.loader.parser, "__name__", "") == "csv_columns"
    }
    assert shared_reader == DOCUMENTED_CSV
