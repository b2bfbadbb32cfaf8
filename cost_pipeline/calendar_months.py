"""Calendar months, as their first day: the month after and the month before."""

from __future__ import annotations

from datetime import date


def next_month(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


def previous_month(month: date) -> date:
    return date(month.year - (month.month == 1), (month.month - 2) % 12 + 1, 1)
