"""What a contract check expects, in words a person reads, with an example: the text of a quarantine message.

pandera names a failed check by its code (``str_matches('^-?\\d{1,15}(\\.\\d{1,2})?$')``); a quarantine message
says instead what the column should hold (``an amount such as 12.34, at most 2 decimals``). A regular expression
is never shown: a pattern this module does not know is described as the form the contract sets. The value that
failed never appears either (it may be confidential).
"""

from __future__ import annotations

import re

import pandera.pandas as pa

from cost_pipeline.contract import schemas

ISO_DATE_TIME = "an ISO 8601 date-time such as 2026-11-30T00:00:00Z"
# The column types pandera coerces to, as the value a cell must hold (a failed coercion names no check).
BY_TYPE = {
    "TIMESTAMP": ISO_DATE_TIME,
    "BIGINT": "a whole number such as 42",
    "INTEGER": "a whole number such as 42",
    "DOUBLE": "a number such as 0.93",
    "BOOLEAN": "true or false",
}
# Patterns the contract uses that are not plain numbers, by the pattern itself.
_PATTERNS = {
    schemas._date()[0].statistics["pattern"]: "a date such as 2026-11-30",
    schemas.MONTH_PATTERN: "a month such as 2026-11 (or 2026-11-01)",
    schemas.BATCH_KEY[0].statistics[
        "pattern"
    ]: "a batch key such as B-7: letters, digits, '.', '_', ':' or '-', at most 64 characters",
}
# Checks the contract defines by name, as what the value or the row should be.
_NAMED = {
    "reporting_currency": "the contract's reporting currency",
    "hours_of_a_day": "a decimal number of hours from 0 to 24 such as 7.5 (not 7:30), at most 4 decimals",
    "accrual_service_month": "a service month when there is no invoice date (an accrual)",
    "handoff_cost_per_hour": "a human_cost_per_hour when human_minutes are more than 0 (a hand-off's cost)",
    "latency_known": "a latency_tier or a latency_ms to derive it from",
}
# ``^-?\d{1,N}(\.\d{1,M})?$``: a decimal number with at most N digits before the point and M after it.
_DECIMAL = re.compile(r"^\^(?P<sign>-\?)?\\d\{1,(?P<whole>\d+)\}\(\\\.\\d\{1,(?P<places>\d+)\}\)\?\$$")
_LISTED = 8  # allowed values named in a message; the rest are counted


def decimal_text(pattern: str) -> str | None:
    """``an amount such as 12.3456, at most 10 decimals`` for a plain decimal-number pattern, else None."""
    match = _DECIMAL.match(pattern)
    if match is None:
        return None
    places = int(match.group("places"))
    example = "12." + "3456"[: min(places, 4)]
    what = "an amount" if match.group("sign") else "a number that is not negative"
    return f"{what} such as {example}, at most {places} decimal{'s' if places != 1 else ''}"


def pattern_text(pattern: str) -> str:
    return _PATTERNS.get(pattern) or decimal_text(pattern) or "text in the form the contract sets for this column"


def _values_text(values: object) -> str:
    listed = [str(v) for v in values] if isinstance(values, list | tuple | set | frozenset) else []
    if not listed:
        return "one of the values the contract lists"
    shown = ", ".join(listed[:_LISTED])
    more = f" (and {len(listed) - _LISTED} more)" if len(listed) > _LISTED else ""
    return f"one of {shown}{more}"


def check_text(check: pa.Check) -> str:
    """What a value passing ``check`` is, in words, with an example where there is one."""
    if check.description:  # a check the contract declares with its own words (a domain, a cross-field rule)
        return str(check.description)
    stats = check.statistics or {}
    name = check.name
    if name == "str_matches":
        return pattern_text(str(stats.get("pattern", "")))
    if name == "isin":
        return _values_text(stats.get("allowed_values"))
    bounds = {
        "greater_than_or_equal_to": ("min_value", "a number of at least"),
        "greater_than": ("min_value", "a number greater than"),
        "less_than_or_equal_to": ("max_value", "a number of at most"),
        "less_than": ("max_value", "a number less than"),
    }
    if name in bounds:
        key, words = bounds[name]
        return f"{words} {stats.get(key)}"
    if name == "in_range":
        return f"a number from {stats.get('min_value')} to {stats.get('max_value')}"
    return _NAMED.get(str(name), f"a value that passes the contract's check {name}")


_DECIMAL_TYPE = re.compile(r"^DECIMAL\((?P<precision>\d+),\s*(?P<scale>\d+)\)$")


def warehouse_text(sql_type: str) -> str:
    """What the warehouse column of ``sql_type`` can store, for a value the contract's checks let through."""
    decimal = _DECIMAL_TYPE.match(sql_type)
    if decimal:
        whole = int(decimal.group("precision")) - int(decimal.group("scale"))
        return f"a number with at most {whole} digits before the point and {decimal.group('scale')} after it"
    return {
        "DATE": "a calendar date such as 2026-11-30",
        "INTEGER": "a whole number from -2147483648 to 2147483647",
    }.get(sql_type, f"a value of type {sql_type}")


def column_message(column: str, sql_type: str, failed: str, check: pa.Check | None) -> str:
    """The quarantine message for a column whose value failed ``failed`` (pandera's name for the check)."""
    if failed == "not_nullable":
        return f"column {column} may not be blank"
    if check is None:  # a failed coercion or dtype check: the value is not of the column's type
        return f"column {column} should hold {BY_TYPE.get(sql_type, 'a value of type ' + sql_type)}"
    return f"column {column} should hold {check_text(check)}"


def row_message(check: pa.Check | None, failed: str) -> str:
    """The quarantine message for a row that failed a check across its columns."""
    return f"the row should have {_NAMED.get(failed) or (check_text(check) if check else 'what the contract sets')}"
