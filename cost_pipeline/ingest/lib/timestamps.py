"""Timestamps as exports write them (ISO dates and date-times, ``Z`` or an offset, or a number of a declared unit
since the epoch) -> naive UTC, in Python and in DuckDB SQL, never depending on the host's or session's time zone."""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from cost_pipeline.contract.schemas import TIME_UNITS
from cost_pipeline.ingest.lib.records import FileRejected, RowRejected

# The date-time text every source takes, read in Python (``from_iso``) and in SQL (``utc_timestamp_sql``) alike: a
# date alone, or a date and a time of day (``T`` or, as RFC 3339 and the FinOps sample write it, a space) with
# optional seconds and fraction and an optional zone (``Z`` or an offset; none is UTC). Hours, minutes, seconds and
# offsets are in range, and the year is not 0000 (DuckDB would read 24:00 as the next day, +24:00 as a day's offset
# and year 0 as 1 BC; Python refuses them); the other forms Python's ``fromisoformat`` reads (compact
# 20261102T090000, week dates 2026-W45-1, an hour alone, a comma before the fraction, an offset with seconds) are not
# ISO text any source takes.
_ISO_8601 = re.compile(
    r"(?:[1-9]\d{3}|0[1-9]\d{2}|00[1-9]\d|000[1-9])-\d{2}-\d{2}"
    r"(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,9})?)?"
    r"(?:Z|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?)?)?",
    re.ASCII,
)
ISO_8601_EXAMPLE = "an ISO 8601 date-time such as 2026-11-30T00:00:00Z"
# What SQL's ``trim`` strips from both ends of a value: the Unicode space separators (category Zs, all in the BMP),
# not a tab or a line break.
_SQL_TRIMMED = "".join(chr(code) for code in range(0x10000) if unicodedata.category(chr(code)) == "Zs")


def from_iso(text: str) -> datetime:
    """``datetime.fromisoformat`` of the text SQL reads as a time too (``_ISO_8601``, spaces around it trimmed as
    SQL's ``trim`` does); ``ValueError`` for any other text, so that the same text is a time in every source or in
    none."""
    trimmed = text.strip(_SQL_TRIMMED)
    if not _ISO_8601.fullmatch(trimmed):
        raise ValueError("not an ISO 8601 date or date-time as every source reads them")
    return datetime.fromisoformat(trimmed)


def utc_naive(value: object) -> object:
    """ISO text (or an aware datetime, as Parquet readers return) -> naive UTC datetime; blank text -> None.

    Anything else, text ``from_iso`` refuses included, is returned unchanged for validation to reject
    (``lib.validate`` refuses text left in a time column: pandas would guess at it, and drop a zone name such as
    ``EST``).
    """
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    try:
        parsed = from_iso(value)
        return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed
    except (ValueError, OverflowError):  # OverflowError: an offset that moves year 1 or 9999 off the calendar
        return value


def iso_utc_naive(value: object, column: str) -> object:
    """Like ``utc_naive``, but text that is not an ISO 8601 date or date-time (``from_iso``) is refused at once.

    ``01.04.2025``, ``04/01/2025`` or a compact ``20250401T000000`` (and an impossible ``2023-02-01T30:00:00Z``)
    raise ``RowRejected`` with rule ``<column>.iso_8601``; blank text too; a missing value (None) and a datetime pass
    as ``utc_naive`` treats them.
    """
    parsed = utc_naive(value)
    if isinstance(value, str) and not isinstance(parsed, datetime):
        raise RowRejected(
            f"{column}.iso_8601",
            f"column {column} is not a calendar date-time written as "
            f"{ISO_8601_EXAMPLE} (or a date alone, or an offset)",
        )
    return parsed


def is_number(value: object) -> bool:
    """A number where a time should be (a Parquet INT64 or DOUBLE column, a JSON number), not text or a datetime."""
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def number_time_message(column: str) -> str:
    return (
        f"column {column} holds a number, and the contract names no unit for it (s, ms, us or ns since "
        f"1970-01-01 UTC): expected {ISO_8601_EXAMPLE}"
    )


_EPOCH = datetime(1970, 1, 1)


def utc_time(value: object, unit: str | None = None) -> object:
    """A time value as naive UTC: text or an aware datetime by ``utc_naive``, a number by its declared ``unit``.

    A number whose unit is not declared, or that is off the calendar, is returned as text for validation to refuse.
    """
    if not is_number(value):
        return utc_naive(value)
    try:
        if unit is None or not math.isfinite(value):
            raise ValueError(unit)
        micros = Decimal(str(value)) * TIME_UNITS[unit]
        return _EPOCH + timedelta(microseconds=int(micros))
    except (ValueError, OverflowError, ArithmeticError):
        return str(value)


# Text ending in a zone (Z or an offset, after a time of day) is a moment: converted to UTC. Other text is UTC.
_ZONED_TEXT = r"\d[T ]\d.*(Z|[+-]\d{2}(:?\d{2})?)$"


def utc_timestamp_sql(text: str) -> str:
    """SQL turning timestamp text into a naive UTC timestamp (null if it is none), whatever the session's zone.

    DuckDB's cast of text to ``timestamp`` drops an offset, and whatever follows the time (``CET``, ``EST``, any
    word); its cast to ``timestamptz`` reads a naive time in the session's zone. So only text that is an ISO 8601
    date or date-time (``_ISO_8601``, as ``from_iso`` reads it, spaces around it trimmed) is a time: zoned text goes
    through ``timestamptz`` and back to UTC, other text straight to ``timestamp``; anything else is null, for the
    source's rule to quarantine.
    """
    trimmed = f"trim({text})"
    return (
        f"case when not regexp_full_match({trimmed}, '{_ISO_8601.pattern}') then null "
        f"when regexp_matches({trimmed}, '{_ZONED_TEXT}') "
        f"then timezone('UTC', try_cast({trimmed} as timestamptz)) else try_cast({trimmed} as timestamp) end"
    )


_NUMERIC_TYPES = (
    *("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE", "DECIMAL"),
    *("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"),
)


def landing_time_sql(column: str, landing_type: str, unit: str | None = None) -> str:
    """SQL for one landing time column (quoted ``column`` of DuckDB type ``landing_type``) as naive UTC.

    A number is refused (``FileRejected``, rule ``<name>.time_unit``) unless ``unit`` names what it counts.
    """
    kind = landing_type.upper()
    if kind.startswith(("VARCHAR", "TEXT")):
        return utc_timestamp_sql(column)
    if kind.startswith("TIMESTAMP WITH TIME ZONE"):
        return f"timezone('UTC', {column})"
    if kind.startswith(_NUMERIC_TYPES):
        name = column.strip('"')
        if unit is None:
            raise FileRejected(f"{name}.time_unit", number_time_message(name))
        return f"make_timestamp(cast(round({column} * {TIME_UNITS[unit]}) as bigint))"
    return f"try_cast({column} as timestamp)"
