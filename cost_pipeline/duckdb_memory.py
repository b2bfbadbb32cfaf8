"""How much memory DuckDB may use on the warehouse and where it spills: one setting for every connection.

Left alone, DuckDB takes 80 % of the machine's RAM per process, and the night's ingest and its dbt build would
each claim that much. Every connection the pipeline opens on the warehouse - ingest (``ingest.lib.warehouse
.connect``), publishing (``publish``) and dbt (the profile's ``settings``) - runs under an explicit
``memory_limit`` and spills what does not fit into ``<warehouse file name>.tmp/`` beside the warehouse (DuckDB's
own spill folder for a database file, named after the warehouse, so a spill never lands in the working folder).

The limit is, first found: the warehouse resource's ``memory_limit`` (Dagster run config), the environment
variable ``COST_DUCKDB_MEMORY_LIMIT``, else ``DEFAULT_MEMORY_LIMIT``. It is in DuckDB's units (``4GiB``,
``500MB``). It bounds DuckDB's buffers, not the whole process: a process holds its Python objects besides.
DuckDB's thread count stays its default (one per core).
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

MEMORY_LIMIT_VARIABLE = "COST_DUCKDB_MEMORY_LIMIT"
# Set for dbt's process only, from the warehouse path (profiles.yml reads it); never needed by hand.
TEMP_DIRECTORY_VARIABLE = "COST_DUCKDB_TEMP_DIRECTORY"
DEFAULT_MEMORY_LIMIT = "4GiB"


def memory_limit(configured: str | None = None) -> str:
    """The limit in force: ``configured`` (the resource's field), else the environment, else the default."""
    value = (configured or os.environ.get(MEMORY_LIMIT_VARIABLE) or "").strip()
    return value or DEFAULT_MEMORY_LIMIT


def temp_directory(warehouse: Path) -> Path:
    """Where DuckDB spills for ``warehouse``: ``<warehouse file name>.tmp`` in its folder."""
    return warehouse.with_name(f"{warehouse.name}.tmp")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def limit_memory(con: duckdb.DuckDBPyConnection, warehouse: Path, configured: str | None = None) -> None:
    """Put ``con`` under the memory limit, spilling beside ``warehouse``. A limit DuckDB cannot read is an error
    naming the variable."""
    limit = memory_limit(configured)
    try:
        con.execute(f"set memory_limit = {_literal(limit)}")
    except duckdb.Error as error:
        raise ValueError(
            f"DuckDB memory limit {limit!r} (resource memory_limit or {MEMORY_LIMIT_VARIABLE}) is not a size such "
            f"as 4GiB or 500MB: {str(error).strip().splitlines()[0]}"
        ) from None
    con.execute(f"set temp_directory = {_literal(str(temp_directory(warehouse)))}")


def dbt_environment(warehouse: Path, configured: str | None = None) -> dict[str, str]:
    """The variables dbt's profile reads for the same limit and spill folder (see dbt_project/profiles.yml)."""
    return {MEMORY_LIMIT_VARIABLE: memory_limit(configured), TEMP_DIRECTORY_VARIABLE: str(temp_directory(warehouse))}
