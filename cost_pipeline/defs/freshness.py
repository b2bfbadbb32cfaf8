"""Freshness: one ``delivered_on_time`` check (warning severity) per landing source's raw asset.

A source delivers when a file with bytes the warehouse has not seen lands and is loaded (``ops.file_arrivals``,
kept by the ingest assets): a renamed file is no delivery, a re-exported one is. The check warns when the source's
newest delivery is older than the contract allows (``operations.freshness``, ``max_age_hours`` per source), or, for a
source with a due time (``due``: daily, weekly or monthly, ``cost_pipeline.contract.due``), when the delivery due at
the latest due time has not come: nothing arrived since the due time before it. A source
that never delivered warns too, unless one of its alternatives (``operations.freshness.alternatives``: the same
records in another tool's format, such as dcgm-exporter scrapes where DCGM CSVs come) delivered: it is then not
expected, passes, and says so. A source the contract marks ``expected: false`` (a feed the organisation does not
have, such as serving logs where nothing is served) passes whatever its age, and says so. It only reads the
warehouse, so it can run on its own (from the UI, or in any run that materialises the source).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import dagster as dg
import duckdb

from cost_pipeline.contract import load_contract
from cost_pipeline.contract.due import DeliveryDue
from cost_pipeline.defs.resources import Warehouse
from cost_pipeline.ingest.lib.arrivals import newest_arrival
from cost_pipeline.ingest.lib.source import Source
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


def freshness_check(source: Source) -> dg.AssetChecksDefinition:
    """The ``delivered_on_time`` check of one source's raw asset."""
    contract = load_contract()
    max_age_hours, alternatives = contract.max_age_hours(source.name), contract.delivery_alternatives(source.name)
    expected, due = contract.delivery_expected(source.name), contract.delivery_due(source.name)
    late = (
        f"for more than {max_age_hours:g} h" if due is None else f"since the due time before the latest one (due {due})"
    )

    @dg.asset_check(
        asset=dg.AssetKey(["raw", source.name]),
        name=CHECK,
        description=(
            f"Warns when {source.name} has delivered no new file (new bytes) {late}, or never did"
            + (f" while none of {', '.join(alternatives)} did" if alternatives else "")
            + " (contract operations.freshness)."
            if expected
            else f"Passes: {source.name} is not expected (contract operations.freshness: expected false)."
        ),
    )
    def _delivered_on_time(warehouse: Warehouse) -> dg.AssetCheckResult:
        con = warehouse.connect()
        try:
            return delivery_result(
                con, source.name, max_age_hours, alternatives=alternatives, expected=expected, due=due
            )
        finally:
            con.close()

    return _delivered_on_time


freshness_checks: list[dg.AssetChecksDefinition] = [freshness_check(source) for source in SOURCES.values()]
