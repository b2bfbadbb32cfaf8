"""Timestamps as exports write them (ISO dates and date-times, ``Z`` or an offset) -> naive UTC."""

from __future__ import annotations

from datetime import UTC, datetime


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
    except (ValueError, OverflowError):     # OverflowError: an offset that moves year 1 or 9999 off the calendar
        return value
