"""The generated parts of the docs: each lies between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``
in a markdown file, and is rendered from the code that the docs describe. ``cost-pipeline docs`` rewrites them;
a test fails while one is out of date. The prose around the markers is hand-written and left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from cost_pipeline.ingest.registry import render_inputs

REPOSITORY = Path(__file__).resolve().parents[1]
END = "<!-- end generated -->"
# (markdown file under the repository, block name) -> what renders the block.
BLOCKS: dict[tuple[str, str], Callable[[], str]] = {
    ("docs/inputs.md", "inputs"): render_inputs,
}


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)({re.escape(END)})", re.DOTALL)


def generated_block(text: str, name: str) -> str:
    """The text of block ``name`` in a markdown document; ``ValueError`` when its markers are missing."""
    match = _block(name).search(text)
    if match is None:
        raise ValueError(f"no <!-- generated: {name} --> ... {END} markers")
    return match.group(2)


def with_block(text: str, name: str, content: str) -> str:
    """The document with block ``name`` replaced by ``content``."""
    generated_block(text, name)     # the markers must be there
    return _block(name).sub(lambda m: m.group(1) + content + m.group(3), text, count=1)


def write_generated(root: Path = REPOSITORY) -> list[Path]:
    """Rewrite every generated block that is out of date; returns the files changed."""
    changed = []
    for (relative, name), render in BLOCKS.items():
        path = root / relative
        text = path.read_text(encoding="utf-8")
        updated = with_block(text, name, render())
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            changed.append(path)
    return changed
