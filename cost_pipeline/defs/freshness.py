"""Freshness: one ``delivered_on_time`` check (warning severity) per landing source's raw asset.

A source's check reads its own deliveries, and those of its alternatives when it has any. Without alternatives
the check is declared on the source's ingest asset and evaluated in its step, after the load, on the load's own
connection (``defs/ingest.py``): the night opens the warehouse once for such a source, not twice, in one step, not
two. With alternatives it is a step of its own that runs after their loads too (``additional_deps``), so that the
night an alternative first delivers, it is seen.

A source delivers when a file with bytes the warehouse has not seen lands and is loaded (``ops.file_arrivals``,
kept by the ingest assets): a renamed file is no delivery, a re-exported one is. The check warns when the source's
newest delivery is older than the contract allows (``operations.freshness``, ``max_age_hours`` per source), or, for a
source with a due time (``due``: daily, weekly or monthly, ``cost_pipeline.contract.due``), when the delivery due at
the latest due time has not come: nothing arrived since the due time before it. A source
that never delivered warns too, unless one of its alternatives (``operations.freshness.alternatives``: the same
records in another tool's format, such as dcgm-exporter scrapes where DCGM CSVs come) delivered: it is then not
expected, passes, and says so. A source the contract marks ``expected: false`` (a feed the organisation does not
have, such as serving logs where nothing is served) passes whatever its age, and says so. It only reads the
warehouse, so it can run on its own (from the UI): the ingest asset is subsettable, and a run that selects its
check alone evaluates it without loading anything.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import dagster as dg
import duckdb

from cost_pipeline.contract import load_contract
from cost_pipeline.contract.due import DeliveryDue
from cost_pipeline.defs.resources import Warehouse
from cost_pipeline.ingest.lib.arrivals import newest_arrival
from cost_pipeline.ingest.lib.records import one_line
from cost_pipeline.ingest.registry import SOURCES

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

    @property
    def in_load_step(self) -> bool:
        """The check reads only its own source's deliveries, so its load's step evaluates it. A source with
        alternatives reads theirs too: its check is a step of its own, after their loads (``separate_check``)."""
        return not self.alternatives

    def description(self) -> str:
        late = (
            f"for more than {self.max_age_hours:g} h"
            if self.due is None
            else f"since the due time before the latest one (due {self.due})"
        )
        return (
            f"Warns when {self.source} has delivered no new file (new bytes) {late}, or never did"
            + (f" while none of {', '.join(self.alternatives)} did" if self.alternatives else "")
            + " (contract operations.freshness)."
            if self.expected
            else f"Passes: {self.source} is not expected (contract operations.freshness: expected false)."
        )

    def spec(self) -> dg.AssetCheckSpec:
        """The ``delivered_on_time`` check, declared on the source's ingest asset (``in_load_step``)."""
        return dg.AssetCheckSpec(CHECK, asset=dg.AssetKey(["raw", self.source]), description=self.description())

    def result(self, con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
        """The check's result; a failure to read the deliveries on ``con`` is a warning naming the error, not the
        step's failure (in the load's step it would cost the source its materialisation)."""
        try:
            return delivery_result(
                con,
                self.source,
                self.max_age_hours,
                alternatives=self.alternatives,
                expected=self.expected,
                due=self.due,
            )
        except Exception as error:  # noqa: BLE001 - reported as the check's own warning
            return dg.AssetCheckResult(
                asset_key=dg.AssetKey(["raw", self.source]),
                check_name=CHECK,
                passed=False,
                severity=dg.AssetCheckSeverity.WARN,
                description=f"the deliveries of {self.source} could not be read: {one_line(error)}",
            )

    def result_on(self, warehouse: Warehouse) -> dg.AssetCheckResult:
        """The check's result on a connection of its own (a step that loads nothing)."""
        with contextlib.closing(warehouse.connect()) as con:
            return self.result(con)

    def separate_check(self) -> dg.AssetChecksDefinition:
        """The check as a step of its own, after the loads of the source and of its alternatives."""

        @dg.asset_check(
            asset=dg.AssetKey(["raw", self.source]),
            name=CHECK,
            description=self.description(),
            additional_deps=[dg.AssetKey(["raw", other]) for other in self.alternatives],
        )
        def _delivered_on_time(warehouse: Warehouse) -> dg.AssetCheckResult:
            return self.result_on(warehouse)

        return _delivered_on_time


# The checks that are steps of their own: those of sources with alternatives (the others are their loads' checks).
freshness_checks: list[dg.AssetChecksDefinition] = [
    freshness.separate_check() for freshness in map(Freshness.of, SOURCES) if not freshness.in_load_step
]
