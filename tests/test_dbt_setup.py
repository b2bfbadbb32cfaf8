"""The prepared dbt manifest is reused while the project is unchanged, and re-parsed after an edit or when the
warehouse's database name changes (issue 13, CI time; issue 11, fast launches)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cost_pipeline.dbt_setup import (
    DBT_PROJECT_DIR,
    NOT_PROJECT_SOURCE,
    fingerprint_path,
    manifest_fingerprint,
    prepare_manifest,
)

MODEL = Path("models/marts/finance/fct_batch_costs.sql")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the dbt project, so editing a model never touches the real one."""
    monkeypatch.setenv("COST_WAREHOUSE", str(tmp_path / "a" / "warehouse.duckdb"))
    copy = tmp_path / "dbt_project"
    shutil.copytree(DBT_PROJECT_DIR, copy, ignore=shutil.ignore_patterns(*NOT_PROJECT_SOURCE))
    return copy


def _written(path: Path) -> tuple[int, int]:
    """Identity of the file's last write: os.replace gives a new inode, a rewrite a new mtime."""
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns


def _nodes(manifest: Path) -> dict:
    return json.loads(manifest.read_text(encoding="utf-8"))["nodes"]


def test_a_second_prepare_reuses_the_manifest_and_an_edit_parses_again(project, tmp_path, monkeypatch):
    manifest = prepare_manifest(project)
    first = _written(manifest)
    assert fingerprint_path(project).read_text(encoding="utf-8").strip() == manifest_fingerprint(project)
    models = [node for node in _nodes(manifest).values() if node["resource_type"] == "model"]
    assert {node["database"] for node in models} == {"warehouse"}, "dbt-duckdb names the database after the file"

    assert prepare_manifest(project) == manifest
    assert _written(manifest) == first, "an unchanged project must not be parsed again"

    monkeypatch.setenv("COST_WAREHOUSE", str(tmp_path / "b" / "warehouse.duckdb"))
    prepare_manifest(project)
    assert _written(manifest) == first, "the same warehouse file name in another folder shares the manifest"
    monkeypatch.setenv("COST_WAREHOUSE", str(tmp_path / "b" / "night.duckdb"))
    assert fingerprint_path(project).read_text(encoding="utf-8").strip() != manifest_fingerprint(project), \
        "another file name is another database name in the manifest"

    monkeypatch.setenv("COST_WAREHOUSE", str(tmp_path / "a" / "warehouse.duckdb"))
    edited = project / MODEL
    edited.write_text(edited.read_text(encoding="utf-8") + "\n-- edited by test_dbt_setup\n", encoding="utf-8")
    prepare_manifest(project)
    assert _written(manifest) != first, "an edited model must be parsed again"
    model = _nodes(manifest)["model.cost_pipeline.fct_batch_costs"]
    assert "-- edited by test_dbt_setup" in model["raw_code"]


def test_dbt_output_folders_do_not_change_the_fingerprint(project):
    before = manifest_fingerprint(project)
    for folder in ("target", "logs"):
        (project / folder).mkdir(exist_ok=True)
        (project / folder / "anything.txt").write_text("x", encoding="utf-8")
    assert manifest_fingerprint(project) == before
    (project / "macros" / "new_macro.sql").write_text("{% macro new_macro() %}1{% endmacro %}\n", encoding="utf-8")
    assert manifest_fingerprint(project) != before
