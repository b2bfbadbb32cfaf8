"""Publishing the marts for BI readers: the finance and engineering files, after every mart is rebuilt (R20).

The asset depends on every dbt model of schema ``marts``, so in the nightly job it runs after dbt and only when
dbt succeeded; a failed run leaves yesterday's published files in place. Its metadata names the files and counts
tables and columns; it never holds a value.
"""

import dagster as dg
import duckdb

from cost_pipeline.contract import load_contract
from cost_pipeline.defs.dbt import cost_models
from cost_pipeline.defs.resources import Warehouse
from cost_pipeline.publish import ENGINEERING, FINANCE, MARTS, publish

GROUP = "publish"
# The warehouse file is held by another writer for a moment (a manual session): wait and try again.
TRANSIENT_RETRIES = 5
TRANSIENT_WAIT_SECONDS = 2

mart_keys = sorted((key for key in cost_models.keys if key.path[0] == MARTS), key=lambda key: key.to_user_string())


@dg.asset(
    key=["published", "marts"],
    group_name=GROUP,
    owners=load_contract().owners("published", kind="layers"),
    kinds={"duckdb"},
    deps=mart_keys,
    description="The marts copied into <warehouse>.finance.duckdb (every column) and <warehouse>.engineering.duckdb "
    "(without the contract's confidential columns), and as one Parquet file per mart into <warehouse>.finance/ and "
    "<warehouse>.engineering/, each swapped in atomically for BI readers (DuckDB 1.1+ storage, column comments).",
)
def published_marts(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    try:
        publication = publish(warehouse.file, memory_limit=warehouse.memory_limit)
    except duckdb.IOException as error:
        if "lock" not in str(error).lower():
            raise
        raise dg.RetryRequested(max_retries=TRANSIENT_RETRIES, seconds_to_wait=TRANSIENT_WAIT_SECONDS) from error
    omitted = list(publication.omitted)
    context.log.info(
        f"published {publication.tables[FINANCE]} marts tables for finance and "
        f"{publication.tables[ENGINEERING]} for engineering; engineering omits {omitted}"
    )
    return dg.MaterializeResult(
        metadata={
            "finance_file": dg.MetadataValue.path(str(publication.files[FINANCE])),
            "finance_tables": publication.tables[FINANCE],
            "engineering_file": dg.MetadataValue.path(str(publication.files[ENGINEERING])),
            "engineering_tables": publication.tables[ENGINEERING],
            "engineering_omitted_columns": dg.MetadataValue.json(omitted),
            "input_files": publication.input_files,
            "finance_parquet": dg.MetadataValue.path(str(publication.parquet[FINANCE])),
            "engineering_parquet": dg.MetadataValue.path(str(publication.parquet[ENGINEERING])),
            "as_of": publication.as_of.isoformat(),
        }
    )


publish_assets: list[dg.AssetsDefinition] = [published_marts]
