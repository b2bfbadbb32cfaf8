"""Every raw row carries its landing file and line through staging (issue 10): a value that gets past ingest and
then fails a dbt test is found in its file by the failing test's stored rows. Each staging model read from a
landing source documents source_file and source_line, and the demo's staging tables hold them."""

from __future__ import annotations

import json

from cost_pipeline.dbt_setup import manifest_path
from cost_pipeline.ingest.registry import SOURCES

PROVENANCE = {"source_file", "source_line"}


def _landing_staging_models() -> dict[str, dict]:
    """Staging models (by name) that read a raw table loaded from landing files, from dbt's manifest."""
    manifest = json.loads(manifest_path().read_text(encoding="utf-8"))
    landing = {
        unique_id
        for unique_id, source in manifest["sources"].items()
        if source["source_name"] == "raw" and source["name"] in SOURCES
    }
    return {
        node["name"]: node
        for node in manifest["nodes"].values()
        if node["resource_type"] == "model"
        and node["fqn"][1:2] == ["staging"]
        and landing & set(node["depends_on"]["nodes"])
    }


def test_every_staging_model_of_a_landing_source_documents_its_file_and_line():
    models = _landing_staging_models()
    assert {"stg_ledger__purchases", "stg_tasks__outcomes", "stg_serving__requests"} <= set(models)
    missing = {name: sorted(PROVENANCE - set(node["columns"])) for name, node in models.items()}
    assert {name: gone for name, gone in missing.items() if gone} == {}


def test_every_staging_table_of_a_landing_source_holds_its_file_and_line(demo_run):
    assert demo_run.succeeded
    columns: dict[str, set[str]] = {}
    for table, column in demo_run.query(
        "select table_name, column_name from information_schema.columns where table_schema = 'staging'"
    ):
        columns.setdefault(table, set()).add(column)
    models = _landing_staging_models()
    assert set(models) <= set(columns), "every such model is built on the demo night"
    assert {name: sorted(PROVENANCE - columns[name]) for name in models if PROVENANCE - columns[name]} == {}
