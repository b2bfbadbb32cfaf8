"""The reference tables in ``docs/`` that are rendered from the files that define them.

A table written by hand beside the yml or the contract drifts from it; so each such table sits in its doc between
``<!-- generated: NAME -->`` and ``<!-- end generated -->`` and is rendered here. Prose around a block is kept.
``cost-pipeline docs`` rewrites the blocks; ``tests/test_docs_current.py`` fails while one is stale.

A block is one line of ``BLOCKS``: its name, the doc it lives in and the function that renders it. Rendering reads
only files in the repository and keeps their order, so the same checkout always renders the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from cost_pipeline.contract import Contract, load_contract
from cost_pipeline.ingest.registry import render_domains, render_inputs, sources
from cost_pipeline.markdown import table

REPO_ROOT = Path(__file__).resolve().parents[1]
MARTS_DIR = REPO_ROOT / "dbt_project" / "models" / "marts"
CONTRACT_DIR = Path(__file__).resolve().parent / "contract"

END_MARKER = "<!-- end generated -->"


class DocBlock(NamedTuple):
    file: str  # relative to the repository root
    render: Callable[[], str]


def _number(value: Any) -> str:
    """A contract number as the YAML file writes it: 60 rather than 60.0, 0.05 as 0.05."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def render_marts() -> str:
    """Every mart of ``dbt_project/models/marts/<folder>/*.yml``: its description and each column's description,
    with its data type where the yml declares one. Files in path order, models and columns in file order."""
    lines: list[str] = []
    folder = None
    for path in sorted(MARTS_DIR.rglob("*.yml")):
        models = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("models") or []
        for model in models:
            if path.parent.name != folder:
                folder = path.parent.name
                lines += [f"### {folder}", ""]
            columns = model.get("columns") or []
            typed = any("data_type" in column for column in columns)
            lines += [
                f"#### `{model['name']}`",
                "",
                " ".join(str(model.get("description", "")).split()),
                "",
                f"Defined in `{path.relative_to(REPO_ROOT).as_posix()}`.",
                "",
            ]
            headings = ["column", "data type", "description"] if typed else ["column", "description"]
            rows = (
                [f"`{c['name']}`", *([c.get("data_type", "")] if typed else []), c.get("description", "")]
                for c in columns
            )
            lines += [*table(headings, rows), ""]
    return "\n".join(lines)


def _package_contracts() -> list[Contract]:
    """The contract versions shipped in the package, oldest first (a deployment's added folders are its own)."""
    versions = [path.stem.removeprefix("definitions_") for path in CONTRACT_DIR.glob("definitions_v*.yaml")]
    return [load_contract(version) for version in sorted(versions, key=lambda v: int(v[1:]))]


_ENUMERATION_COLUMNS = ("category", "is_rerun", "is_same_cause", "lower_bound", "upper_bound", "description")


def render_contract() -> str:
    """Per contract version: every enumeration with its allowed values (the rows of ``raw.contract_enumerations``)
    and every numeric parameter (``raw.contract_parameters``), in the order the contract file lists them; then each
    source's owners and expected delivery (``operations``)."""
    lines: list[str] = []
    for contract in _package_contracts():
        lines += [
            f"### Contract {contract.version}",
            "",
            f"Reporting currency: `{contract.reporting_currency}`.",
            "",
            "#### Enumerations",
            "",
        ]
        enumerations: dict[str, list[dict[str, Any]]] = {}
        for row in contract.enumeration_rows():
            enumerations.setdefault(row["enumeration"], []).append(row)
        for name, rows in enumerations.items():
            shown = [column for column in _ENUMERATION_COLUMNS if any(row[column] is not None for row in rows)]
            body = ([f"`{row['code']}`", *("" if row[c] is None else _number(row[c]) for c in shown)] for row in rows)
            lines += [f"`{name}`:", "", *table(["code", *shown], body), ""]
        lines += ["#### Numeric parameters", ""]
        lines += table(
            ["name", "value"], ([f"`{row['name']}`", _number(row["value"])] for row in contract.parameter_rows())
        )
        lines += ["", "#### Owners and expected delivery (operations)", ""]
        lines += table(
            ["raw table", "owners", "delivery expected"],
            ([f"`raw.{name}`", ", ".join(contract.owners(name)), _expected(contract, name)] for name in sources()),
        )
        lines.append("")
    lines += ["### Value domains", "", render_domains()]
    return "\n".join(lines)


def _expected(contract: Contract, source: str) -> str:
    """When ``source`` is expected to deliver (``operations.freshness``), in words."""
    if not contract.delivery_expected(source):
        return "not expected"
    due = contract.delivery_due(source)
    return f"due {due}" if due else f"newest at most {_number(contract.max_age_hours(source))} h old"


BLOCKS: dict[str, DocBlock] = {
    "inputs": DocBlock("docs/inputs.md", render_inputs),
    "marts": DocBlock("docs/marts.md", render_marts),
    "contract": DocBlock("docs/contract.md", render_contract),
}


def _block_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)({re.escape(END_MARKER)})", re.DOTALL)


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with the block ``name`` holding ``body``; a doc without the block's markers is an error, never a
    silent no-op."""
    pattern = _block_pattern(name)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"expected one '<!-- generated: {name} -->' ... '{END_MARKER}' block")
    content = body if body.endswith("\n") else body + "\n"
    return pattern.sub(lambda match: match.group(1) + content + match.group(3), text)


def _rendered_files(root: Path) -> dict[Path, tuple[str, str]]:
    """Doc path -> (text on disk, text with every block of BLOCKS rendered)."""
    files: dict[Path, tuple[str, str]] = {}
    for name, block in BLOCKS.items():
        path = root / block.file
        current, updated = files.get(path, (path.read_text(encoding="utf-8"),) * 2)
        try:
            files[path] = (current, replace_block(updated, name, block.render()))
        except ValueError as error:
            raise ValueError(f"{block.file}: {error}") from error
    return files


def stale_blocks(root: Path = REPO_ROOT) -> list[str]:
    """Names of the blocks whose doc does not hold what they render now."""
    stale = []
    for name, block in BLOCKS.items():
        text = (root / block.file).read_text(encoding="utf-8")
        if replace_block(text, name, block.render()) != text:
            stale.append(name)
    return stale


def write_docs(root: Path = REPO_ROOT) -> list[Path]:
    """Render every block into its doc; returns the docs that changed."""
    changed = []
    for path, (current, updated) in _rendered_files(root).items():
        if updated != current:
            path.write_text(updated, encoding="utf-8")
            changed.append(path)
    return changed
