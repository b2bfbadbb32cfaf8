"""The finance ledger: procurement and monthly facility costs (I5), and external-service invoices and accruals (I8).

All three are CSV files in the documented shape, read by the shared CSV reader; amounts must be in the contract's
reporting currency.
"""

from __future__ import annotations

from cost_pipeline.contract import schemas
from cost_pipeline.ingest.lib.source import RowLoader, Source, batch_lineage, csv_columns

# An invoice counts once, its billed line, else its newest (stg_services__invoices): a file's invoice may count from
# another file, and with the file retracted another delivery of it counts again, maybe for another batch. So a file
# fed the batch of every delivery of every invoice (vendor, invoice_id) it holds, resolved as the night resolves it.
INVOICE_BATCHES = batch_lineage(
    "raw.service_invoices",
    batch="coalesce(registered.batch_id, 'unattributed')",
    joined="inner join raw.service_invoices as delivery on delivery.vendor = lineage.vendor "
    "and delivery.invoice_id = lineage.invoice_id "
    "left join staging.stg_registry__batches as registered on registered.batch_id = delivery.batch_id",
)

SOURCES = (
    Source(
        "ledger_purchases",
        ("I5",),
        "ledger",
        ("purchases*.csv",),
        "Procurement ledger",
        RowLoader(schemas.ledger_purchases, csv_columns),
    ),
    Source(
        "ledger_facility",
        ("I5",),
        "ledger",
        ("facility*.csv",),
        "Monthly facility costs",
        RowLoader(schemas.ledger_facility, csv_columns),
    ),
    Source(
        "service_invoices",
        ("I8",),
        "services",
        ("*.csv",),
        "External-service invoices and accruals",
        RowLoader(schemas.service_invoices, csv_columns),
        batch_lineage=INVOICE_BATCHES,
        rows_stand_alone=True,
    ),
)
