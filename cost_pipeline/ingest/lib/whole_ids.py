"""Id columns written as numbers: one rule for every source that reads an id (telemetry's ``job_id``, FOCUS's
``ResourceId``, ``BillingAccountId``, ``SubAccountId``).

pandas writes an integer column with nulls as a double, so a Parquet file (or a CSV written from one) holds 2003.0
for the id 2003, which as text names nothing (no job 2003, not the account of the same export as CSV). A whole
number written with a point is the integer's text; a fraction, NaN or an infinity names nothing and is quarantined
(``<column>.whole_number``). The rule is declared once, here, in the two forms the loaders need: SQL for the
in-database path (telemetry) and Python for the row-by-row path (billing), both over the value's text.
"""

from __future__ import annotations

import math
import re

from cost_pipeline.ingest.lib.in_database import Rule, trimmed_sql
from cost_pipeline.ingest.lib.records import RowRejected
from cost_pipeline.ingest.lib.warehouse import quote

WHOLE_WITH_POINT = "[0-9]+[.]0+"
FRACTION = "[0-9]*[.][0-9]*[1-9][0-9]*"


def rule(name: str) -> str:
    return f"{name}.whole_number"


def message(name: str, names: str = "a job") -> str:
    return (
        f"{name} should name {names} such as 2003 (a whole number written 2003.0 is read as 2003); a fraction, NaN or "
        "an infinity names none"
    )


def text_sql(name: str) -> str:
    """A column as trimmed text (a Parquet number too), blank as null."""
    return f"nullif({trimmed_sql(f'cast({quote(name)} as varchar)')}, '')"


def id_sql(name: str) -> str:
    """An id column's text, a whole number written with a point (2003.0) as the integer's (2003)."""
    text = text_sql(name)
    return f"case when regexp_full_match({text}, '{WHOLE_WITH_POINT}') then split_part({text}, '.', 1) else {text} end"


def id_rule(name: str, names: str = "a job") -> Rule:
    """The in-database rule: (rule, condition that breaks it, message); ``names`` what the id names."""
    return (
        rule(name),
        f"(regexp_full_match(coalesce({text_sql(name)}, ''), '{FRACTION}') "
        f"or (typeof({quote(name)}) in ('FLOAT', 'DOUBLE') and not isfinite(try_cast({quote(name)} as double))))",
        message(name, names),
    )


def id_text(value: object, name: str, names: str = "a job") -> object:
    """A value read from a number column (a Parquet double) as its id text, as ``id_sql`` reads it: 1001.0 is
    ``1001``; ``RowRejected`` (``<name>.whole_number``) for a fraction, NaN or infinity. Other values pass as
    they are."""
    if not isinstance(value, float):
        return value
    text = repr(value)
    if not math.isfinite(value) or re.fullmatch(FRACTION, text):
        raise RowRejected(rule(name), message(name, names))
    return text.split(".")[0] if re.fullmatch(WHOLE_WITH_POINT, text) else text
