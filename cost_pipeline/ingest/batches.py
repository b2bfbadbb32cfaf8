"""The batch registry (I10): the team's own record of each batch and its plan, and the trial rounds of each batch.

Both are CSV files in the documented shape, read by the shared CSV reader; the contract schema does the rest.
"""

from __future__ import annotations

from cost_pipeline.contract import schemas
from cost_pipeline.ingest.lib.source import RowLoader, Source, batch_lineage, csv_columns

SOURCES = (
    Source(
        "batch_registry",
        ("I10", "R1", "R18"),
        "registry",
        ("batches*.csv",),
        "The batch registry and plan",
        RowLoader(schemas.batch_registry, csv_columns),
        batch_lineage=batch_lineage("staging.stg_registry__batches"),
    ),
    Source(
        "batch_rounds",
        ("I10", "R18"),
        "registry",
        ("rounds*.csv",),
        "Trial rounds of each batch and the evidence each produced",
        RowLoader(schemas.batch_rounds, csv_columns),
        batch_lineage=batch_lineage("staging.stg_registry__rounds"),
        rows_stand_alone=True,
    ),
)
