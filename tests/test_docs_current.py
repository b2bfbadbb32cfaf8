"""The docs are current: the generated reference blocks match the yml and the contract, the README keeps CI's
command and its size, and every relative link in the docs names a file the repository has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cost_pipeline import docgen
from cost_pipeline.cli import main

ROOT = docgen.REPO_ROOT


def test_generated_blocks_are_current() -> None:
    stale = docgen.stale_blocks()
    assert not stale, (
        f"generated docs out of date: {', '.join(f'{n} in {docgen.BLOCKS[n].file}' for n in stale)}; "
        "run `cost-pipeline docs`"
    )


def test_docs_rewrite_a_stale_block_and_are_then_idempotent(tmp_path: Path) -> None:
    for name, block in docgen.BLOCKS.items():
        doc = tmp_path / block.file
        doc.parent.mkdir(parents=True, exist_ok=True)
        text = (ROOT / block.file).read_text(encoding="utf-8")
        doc.write_text(docgen.replace_block(text, name, "| stale | table |\n"), encoding="utf-8")

    assert sorted(docgen.stale_blocks(tmp_path)) == sorted(docgen.BLOCKS)
    assert len(docgen.write_docs(tmp_path)) == len({block.file for block in docgen.BLOCKS.values()})
    for block in docgen.BLOCKS.values():
        assert (tmp_path / block.file).read_text(encoding="utf-8") == (ROOT / block.file).read_text(encoding="utf-8")
    assert docgen.write_docs(tmp_path) == []
    assert docgen.stale_blocks(tmp_path) == []


def test_docs_check_command_passes_on_the_repository() -> None:
    assert main(["docs", "--check"]) == 0


def test_prose_around_a_block_is_kept_and_missing_markers_are_an_error() -> None:
    text = "intro\n<!-- generated: marts -->\nold\n<!-- end generated -->\noutro\n"
    expected = "intro\n<!-- generated: marts -->\nnew\n<!-- end generated -->\noutro\n"
    assert docgen.replace_block(text, "marts", "new") == expected
    with pytest.raises(ValueError, match="generated: contract"):
        docgen.replace_block(text, "contract", "new")


def test_marts_reference_lists_every_mart_column_with_its_type() -> None:
    rendered = docgen.render_marts()
    assert "#### `fct_batch_costs`" in rendered
    assert "| `total_cost` | decimal(18,2) |" in rendered
    assert "| `fct_storage_governance` |" not in rendered  # models are headings, not rows


def test_contract_reference_lists_every_allowed_value_and_parameter() -> None:
    rendered = docgen.render_contract()
    for enumeration in ("storage_purpose", "labour_task_role", "latency_tier", "review_class"):
        assert f"`{enumeration}`:" in rendered
    assert "| `Rerun after failure` | training_engineering |" in rendered
    assert "| `stop_signal_rounds` | 2 |" in rendered
    assert "| `labour_assumed_rate.data_preparation.typical` | 75 |" in rendered


def test_readme_keeps_ci_command_and_stays_short() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci_command = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert f"```bash\n{ci_command}\n```" in readme, "the README's test command must be the one .ci/run runs"
    assert len(readme.splitlines()) < 150, "keep the README under 150 lines; reference belongs in docs/"


@pytest.mark.parametrize(
    "doc",
    ["README.md", "CONTRIBUTING.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))],
)
def test_relative_links_name_existing_files(doc: str) -> None:
    path = ROOT / doc
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))
    missing = [t for t in targets if "://" not in t and not (path.parent / t).exists()]
    assert not missing, f"{doc} links to files that do not exist: {missing}"
