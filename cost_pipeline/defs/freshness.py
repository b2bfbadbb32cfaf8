"""Freshness: one ``delivered_on_time`` check (warning severity) per landing source's raw asset.

The check is declared on the source's ingest asset and evaluated in its step, after the load, on the load's own
connection (``defs/ingest.py``): a night opens the warehouse once per source, not twice, and runs one step per source.

A source delivers when a file with bytes the warehouse has not seen lands and is loaded (``ops.file_arrivals``,
kept by the ingest assets): a renamed file is no delivery, a re-exported one is. The check warns when the source's
newest delivery is older than the contract allows (``operations.freshness``, ``max_age_hours`` per source), or, for a
source with a due time (``due``: daily, weekly or monthly, ``cost_pipeline.contract.due``), when the delivery due at
the latest due time has not come: nothing arrived since the due time before it. A source
that never delivered warns too, unless one of its alternatives (``operations.freshness.alternatives``: the same
records in another tool's format, such as dcgm-exporter scrapes where DCGM CSVs come) delivered: it is then not
expected, passes, and says so. A source the contract marks ``expected: false`` (a feed the organisation does not
have, such as serving logs where nothing is served) passes whatever its age, and says so. It only reads the
warehouse, so it can run on its own: the ingest asset is subsettable, and a run that selects the check alone (from
the UI) evaluates it without loading anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import dagster as dg
import duckdb

from cost_pipeline.contract import load_contract
from cost_pipeline.contract.due import DeliveryDue
from cost_pipeline.ingest.lib.arrivals import newest_arrival

CHECK = "delivered_on_time"


def delivery_result(
    con: duckdb.DuckDBPyConnection,
    source: str,
    max_age_hours: float,
    now: datetime | None = None,
    alternatives: tuple[str, ...] = (),
    expected: bool = True,
    due: DeliveryDue | None = None,
) -> dg.AssetCheckResult:
    """Whether ``source`` delivered within ``max_age_hours`` of ``now`` (naive UTC) or, with ``due``, since the due
    time before the latest one; or never did while one of its ``alternatives`` did, or is not ``expected`` at all, as
    a warning check result."""
    now = now or datetime.now(UTC).replace(tzinfo=None)
    newest = newest_arrival(con, source)
    age_hours = None if newest is None else (now - newest) / timedelta(hours=1)
    latest_due = None if due is None else due.latest(now)
    since = None if due is None else due.before(latest_due)
    instead = [other for other in alternatives if newest_arrival(con, other) is not None] if newest is None else []
    if age_hours is None:
        on_time = bool(instead)
    else:
        on_time = age_hours <= max_age_hours if due is None else newest > since
    passed = not expected or on_time
    if not expected:
        description = f"{source} is not expected (contract operations.freshness: expected false)"
        description += (
            "; it never delivered a file" if newest is None else f"; last delivered {newest:%Y-%m-%d %H:%M} UTC"
        )
    elif newest is None and instead:
        description = f"{source} never delivered a file; none is expected while {', '.join(instead)} delivers"
    elif newest is None:
        description = f"{source} never delivered a file"
        description += f" (nor did its alternatives {', '.join(alternatives)})" if alternatives else ""
    else:
        description = f"{source} last delivered {newest:%Y-%m-%d %H:%M} UTC, {age_hours:.1f} h ago"
        if due is not None:
            description += f"; due {due}: the delivery due {latest_due:%Y-%m-%d %H:%M} UTC " + (
                "came" if passed else f"has not come (nothing since {since:%Y-%m-%d %H:%M} UTC)"
            )
        elif not passed:
            description += f", more than the {max_age_hours:g} h the contract allows"
    return dg.AssetCheckResult(
        asset_key=dg.AssetKey(["raw", source]),
        check_name=CHECK,
        passed=passed,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={
            "newest_delivery": newest.isoformat(sep=" ") if newest else "",
            "age_hours": -1.0 if age_hours is None else round(age_hours, 2),
            **(
                {"max_age_hours": max_age_hours}
                if due is None
                else {"due": str(due), "latest_due": latest_due.isoformat(sep=" ")}
            ),
        },
    )


@dataclass(frozen=True)
class Freshness:
    """What the contract expects of one source's deliveries (``operations.freshness``)."""

    source: str
    max_age_hours: float
    alternatives: tuple[str, ...]
    expected: bool
    due: DeliveryDue | None

    @classmethod
    def of(cls, source: str) -> Freshness:
        contract = load_contract()
        return cls(
            source,
            contract.max_age_hours(source),
            tuple(contract.delivery_alternatives(source)),
            contract.delivery_expected(source),
            contract.delivery_due(source),
        )

    def spec(self) -> dg.AssetCheckSpec:
        """The ``delivered_on_time`` check of the source's raw asset."""
        late = (
            f"for more than {self.max_age_hours:g} h"
            if self.due is None
            else f"since the due time before the latest one (due {self.due})"
        )
        return dg.AssetCheckSpec(
            CHECK,
            asset=dg.AssetKey(["raw", self.source]),
            description=(
                f"Warns when {self.source} has delivered no new file (new bytes) {late}, or never did"
                + (f" while none of {', '.join(self.alternatives)} did" if self.alternatives else "")
                + " (contract operations.freshness)."
                if self.expected
                else f"Passes: {self.source} is not expected (contract operations.freshness: expected false)."
            ),
        )

    def result(self, con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
        return delivery_result(
            con,
            self.source,
            self.max_age_hours,
            alternatives=self.alternatives,
            expected=self.expected,
            due=self.due,
        )
