"""Timestamps as exports write them (ISO dates and date-times, ``Z`` or an offset) -> naive UTC."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from cost_pipeline.ingest.lib.records import RowRejected


def utc_naive(value: object) -> object:
    """ISO text (or an aware datetime, as Parquet readers return) -> naive UTC datetime.

    Anything unparseable is returned unchanged for validation to reject.
    """
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    if not isinstance(value, str):
        return value
    try:
        parsed = datetime.fromisoformat(value.strip())
        return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed
    except (ValueError, OverflowError):  # OverflowError: an offset that moves year 1 or 9999 off the calendar
        return value


# A date alone, or a date and a time of day (``T`` or, as RFC 3339 and the FinOps sample write it, a space) with
# optional fractional seconds and an optional zone (``Z`` or an offset; none is UTC).
_ISO_8601 = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?", re.ASCII
)
ISO_8601_EXAMPLE = "an ISO 8601 date-time such as 2026-11-30T00:00:00Z"


def iso_utc_naive(value: object, column: str) -> object:
    """Like ``utc_naive``, but text that is not an ISO 8601 date or date-time is never guessed at.

    ``01.04.2025`` or ``04/01/2025`` (and an impossible ``2023-02-01T30:00:00Z``) raise ``RowRejected`` with rule
    ``<column>.iso_8601``; a missing value (None) and a datetime pass as ``utc_naive`` treats them.
    """
    if not isinstance(value, str):
        return utc_naive(value)
    text = value.strip()
    parsed = utc_naive(text) if _ISO_8601.fullmatch(text) else text
    if not isinstance(parsed, datetime):
        raise RowRejected(
            f"{column}.iso_8601",
            f"column {column} is not a calendar date-time written as "
            f"{ISO_8601_EXAMPLE} (or a date alone, or an offset)",
        )
    return parsed
