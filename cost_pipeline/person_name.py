"""Who is one person (R20), in Python: a name as a reader compares it, folded exactly as the warehouse folds it.

The folding is dbt_project/macros/person_key.sql's (``person_name``: every Unicode space a space, runs of spaces one,
invisible characters and combining marks removed, full-width forms and accented letters their ASCII or base letter,
then lower case). Its table is read from the macro itself, never copied: the ingest's rule of a person's day
(``hours_of_a_person_day``) and the models that count people decide "the same person" alike.
tests/test_person_key.py runs the macro's SQL in DuckDB beside this function over tricky spellings.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import jinja2

# The macro file (cost_pipeline.dbt_setup.DBT_PROJECT_DIR / macros; not imported, that module loads dagster-dbt).
PERSON_KEY_MACROS = Path(__file__).resolve().parents[1] / "dbt_project" / "macros" / "person_key.sql"
_SPACES = re.compile(" +")


@cache
def folding() -> tuple[str, str]:
    """The macro's [from, to] of the translate (``person_name_folding``), rendered with plain Jinja: each character
    of from becomes the one at its place in to; those past the end of to are removed."""
    returned: list[list[str]] = []
    template = jinja2.Environment().from_string(PERSON_KEY_MACROS.read_text(encoding="utf-8"))
    template.make_module({"return": lambda value: returned.append(value) or ""}).person_name_folding()
    ((source, target),) = returned
    return source, target


@cache
def _translation() -> dict[int, int | None]:
    source, target = folding()
    return str.maketrans(source[: len(target)], target, source[len(target) :])


def person_name(name: str) -> str:
    """``name`` as the macro's ``person_name`` makes it: lower(trim(collapsed spaces(translate(name)))). Lower case
    one character at a time, as SQL's lower: Python's str.lower writes a final capital sigma as ς, DuckDB as σ."""
    collapsed = _SPACES.sub(" ", name.translate(_translation())).strip(" ")
    return "".join(character.lower() for character in collapsed)
