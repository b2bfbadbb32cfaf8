"""The finance ledger: procurement and monthly facility costs (I5), and external-service invoices and accruals (I8).

All three are CSV files in the documented shape, read by the shared CSV reader; amounts must be in the contract's
reporting currency.
"""

from __future__ import annotations

from cost_pipeline.contract import schemas
from cost_pipeline.ingest.lib.source import RowLoader, Source, batch_lineage, csv_required

SOURCES = (
    Source(
        "ledger_purchases",
        ("I5",),
        "ledger",
        ("purchases*.csv",),
        "Procurement ledger",
        RowLoader(schemas.ledger_purchases, csv_required),
    ),
    Source(
        "ledger_facility",
        ("I5",),
        "ledger",
        ("facility*.csv",),
        "Monthly facility costs",
        RowLoader(schemas.ledger_facility, csv_required),
    ),
    Source(
        "service_invoices",
        ("I8",),
        "services",
        ("*.csv",),
        "External-service invoices and accruals",
        RowLoader(schemas.service_invoices, csv_required),
        batch_lineage=batch_lineage("intermediate.int_service_invoices_costed"),
        rows_stand_alone=True,
    ),
)
