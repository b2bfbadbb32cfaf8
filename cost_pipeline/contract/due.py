"""When a source's delivery is due (``operations.freshness.sources.<source>.due``), in UTC.

A due time recurs: daily (``{at: "01:30"}``), weekly (``{weekday: monday, at: "09:00"}``) or monthly
(``{day: 6, at: "06:00"}``, day 1 to 28, so that every month has it). A source with a due time is on time when it
delivered after the due time before the latest one: at least one delivery in each period, by its due time or late.
Until a period's due time passes, the previous period's delivery is enough. A delivery counts for the period it
arrives in (a file does not say which period it covers): an export delivered late stands for the next period's too,
and a source that delivers once a period on any day never warns; a period with no delivery at all does. A delivery
is timed when a load first saw it (``ops.file_arrivals``), not when it landed: a due time must leave the run that
loads it room.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from cost_pipeline.calendar_months import previous_month

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@dataclass(frozen=True)
class DeliveryDue:
    """A recurring due time, UTC: daily at ``at``; weekly on ``weekday`` (0 is Monday); monthly on ``day``."""

    at: time
    weekday: int | None = None
    day: int | None = None

    def latest(self, now: datetime) -> datetime:
        """The latest due time at or before ``now`` (naive UTC)."""
        if self.day is not None:
            due = datetime.combine(date(now.year, now.month, self.day), self.at)
        elif self.weekday is not None:
            due = datetime.combine(now.date() - timedelta(days=(now.weekday() - self.weekday) % 7), self.at)
        else:
            due = datetime.combine(now.date(), self.at)
        return due if due <= now else self.before(due)

    def before(self, due: datetime) -> datetime:
        """The due time before ``due`` (one of this rule's)."""
        if self.day is not None:
            return datetime.combine(previous_month(due.date()).replace(day=self.day), self.at)
        return due - timedelta(days=7 if self.weekday is not None else 1)

    def __str__(self) -> str:
        at = f"{self.at:%H:%M} UTC"
        if self.day is not None:
            return f"monthly, day {self.day} {at}"
        if self.weekday is not None:
            return f"weekly, {WEEKDAYS[self.weekday]} {at}"
        return f"daily, {at}"


def parse_due(spec: Any, where: str) -> DeliveryDue:
    """``spec`` (the contract's ``due`` mapping) as a due time; ``where`` names it in the error."""
    if not isinstance(spec, dict) or not set(spec) <= {"at", "weekday", "day"} or "at" not in spec:
        raise ValueError(f"{where}: due {spec!r} is not {{at: HH:MM}} with at most one of weekday or day")
    match = re.fullmatch(r"([01]\d|2[0-3]):([0-5]\d)", str(spec["at"]))
    if not match:
        raise ValueError(f"{where}: due at {spec['at']!r} is not a time HH:MM (UTC)")
    at = time(int(match.group(1)), int(match.group(2)))
    if "weekday" in spec and "day" in spec:
        raise ValueError(f"{where}: due names both a weekday and a day of the month")
    if "weekday" in spec:
        if str(spec["weekday"]).lower() not in WEEKDAYS:
            raise ValueError(f"{where}: due weekday {spec['weekday']!r} is not one of {', '.join(WEEKDAYS)}")
        return DeliveryDue(at=at, weekday=WEEKDAYS.index(str(spec["weekday"]).lower()))
    if "day" in spec:
        day = spec["day"]
        if not isinstance(day, int) or isinstance(day, bool) or not 1 <= day <= 28:
            raise ValueError(f"{where}: due day {day!r} is not a day of the month from 1 to 28")
        return DeliveryDue(at=at, day=day)
    return DeliveryDue(at=at)
