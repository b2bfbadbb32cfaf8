"""Markdown tables for the generated reference blocks of ``docs/`` (``docgen.py``, ``ingest/registry.py``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def cell(text: Any) -> str:
    """One Markdown table cell: whitespace folded to single spaces, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def table(headings: list[str], rows: Iterable[list[Any]]) -> list[str]:
    """A Markdown table's lines: the headings, the rule, then one line a row."""
    lines = ["| " + " | ".join(headings) + " |", "|" + "---|" * len(headings)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return lines
