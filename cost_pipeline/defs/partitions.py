"""The monthly partitions: from the contract's ``operations.first_month`` to the current month, UTC (the open month).

Apart from the monthly assets (``defs.monthly``), which read the dbt manifest, so that the CLI can check a month
against the partitions before the manifest is prepared.
"""

import dagster as dg

from cost_pipeline.contract import load_contract

MONTH_FORMAT = "%Y-%m"

monthly_partitions = dg.MonthlyPartitionsDefinition(
    start_date=f"{load_contract().first_month:{MONTH_FORMAT}}", fmt=MONTH_FORMAT, timezone="UTC", end_offset=1
)
