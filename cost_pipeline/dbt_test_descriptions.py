"""What each dbt data test checks, in words: the description of its Dagster asset check (issue 11).

A test's own ``description`` in the yml wins. A singular test (``dbt_project/tests/*.sql``) is described by the
comment it opens with. A generic test is read from its name and arguments (``READINGS``); a generic warning test
says that the night goes on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_REF = re.compile(r"""ref\(\s*['"]([^'"]+)['"]\s*\)""")


def _model(argument: Any) -> str:
    """``ref('dim_batches')`` -> ``dim_batches``; anything else as it is."""
    found = _REF.search(str(argument))
    return found.group(1) if found else str(argument)


def _listed(values: Any) -> str:
    return ", ".join(f"`{v}`" for v in values) if isinstance(values, list | tuple) else f"`{values}`"


# Generic test -> its reading, from the column it is on and its arguments.
READINGS: Mapping[str, Callable[[str, Mapping[str, Any]], str]] = {
    "not_null": lambda column, _: f"`{column}` is never null",
    "unique": lambda column, _: f"No two rows share a `{column}`",
    "accepted_values": lambda column, a: f"`{column}` is one of {_listed(a['values'])}",
    "relationships": lambda column, a: f"Every `{column}` is a `{a['field']}` of `{_model(a['to'])}`",
    "not_null_columns": lambda _, a: f"None of {_listed(a['columns'])} is null",
    "unique_combination": lambda _, a: f"One row per {_listed(a['columns'])}",
    "in_contract_enumeration": lambda column, a: (
        f"`{column}` is a value of the contract's `{a['enumeration']}` enumeration, in the row's contract version"
    ),
    "sums_match": lambda column, a: (
        f"The sum of `{column}` equals the sum of `{a['compare_column']}` in `{_model(a['compare_model'])}`"
        + (f", to within {a['tolerance']}" if a.get("tolerance") else ", to the cent")
    ),
    "sum_at_most": lambda column, a: (
        f"`{column}` adds up to at most {a['at_most']} over the rows of each {_listed(a['group_by'])}"
    ),
    "debits_equal_credits": lambda _, a: f"`{a['debit']}` and `{a['credit']}` balance for each `{a['by']}`",
}


def _opening_comment(sql: str) -> str:
    lines = []
    for line in sql.strip().splitlines():
        if not line.startswith("--"):
            break
        lines.append(line.removeprefix("--").strip())
    return " ".join(lines)


def describe_test(node: Mapping[str, Any]) -> str | None:
    """The description of a dbt test node of the manifest (None if nothing can be said of it)."""
    described = (node.get("description") or "").strip()
    metadata = node.get("test_metadata") or {}
    if not described and metadata.get("name") in READINGS:
        arguments = {k: v for k, v in (metadata.get("kwargs") or {}).items() if k != "model"}
        described = READINGS[metadata["name"]](node.get("column_name") or "", arguments) + "."
        if str(node.get("config", {}).get("severity", "error")).lower() == "warn":
            described += " A warning: the failing rows are listed and the night goes on."
    if not described and not metadata:
        described = _opening_comment(node.get("raw_code") or "")  # a singular test says whether it only warns
    return described or None
