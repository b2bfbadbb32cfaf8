"""The night's clock: the latest instant a landing file can truthfully name.

A landing file describes what has happened: a job's Submit, Eligible, Start and End, a Kubernetes job event, the
month an external service was delivered in. A time after the night that reads the file has not happened, and taken
as true it books work and cost that do not exist (a job ending in 2056 occupies its GPUs every month until then;
an accrual for 2099 is a cost of today's batch). Such a value is quarantined at ingest under a rule ending in
``AFTER_NIGHT``, with its file and line.

The bound is read from the system clock when a file is read (naive UTC), plus ``CLOCK_SKEW``: the machine that
wrote an export and the one that reads it may disagree by a few minutes. A file with a row quarantined under such a
rule is read again every night (``ingest.lib.reuse``): the clock moves on, and a file read afresh is judged as the
file read the night before would be.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

CLOCK_SKEW = timedelta(minutes=15)
AFTER_NIGHT = "after_night"  # the last part of every rule that quarantines a time after the night


def latest_instant() -> datetime:
    """The latest instant (naive UTC) a landing file read now can name: now plus ``CLOCK_SKEW``."""
    return datetime.now(UTC).replace(tzinfo=None) + CLOCK_SKEW


def latest_month() -> date:
    """The first day of the latest month a landing file read now can name as delivered: ``latest_instant``'s."""
    return latest_instant().date().replace(day=1)
