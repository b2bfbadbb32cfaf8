"""How much memory DuckDB may use on the warehouse and where it spills: one setting for every connection.

Left alone, DuckDB takes 80 % of the machine's RAM per process, and the night's ingest and its dbt build would
each claim that much. Every connection the pipeline opens on the warehouse - ingest (``ingest.lib.warehouse
.connect``), publishing (``publish``) and dbt (the profile's ``settings``) - runs under an explicit
``memory_limit`` and spills what does not fit into ``<warehouse file name>.tmp/`` beside the warehouse (DuckDB's
own spill folder for a database file, named after the warehouse, so a spill never lands in the working folder).
A connection to the warehouse file has that folder by default and it is left as is: DuckDB refuses to set the
spill folder again once it has spilled, even to the same folder, and dbt-duckdb sets its profile's settings on
every cursor. Only publishing's in-memory connection is given it.

The limit is, first found: the warehouse resource's ``memory_limit`` (Dagster run config), the environment
variable ``COST_DUCKDB_MEMORY_LIMIT``, else ``DEFAULT_MEMORY_LIMIT``. It is in DuckDB's units (``3GiB``,
``500MB``). It bounds DuckDB's buffers, not the whole process: a process holds its Python objects besides.
DuckDB's thread count stays its default (one per core).
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

MEMORY_LIMIT_VARIABLE = "COST_DUCKDB_MEMORY_LIMIT"
# A process holds about 0.6 GiB beside DuckDB's buffers (its Python, allocations DuckDB does not count): 3 GiB keeps
# the night's largest process under 4 GiB (bench/bench_memory.py, 20 million samples: 3.6 GiB; 4.6 GiB under 4GiB).
DEFAULT_MEMORY_LIMIT = "3GiB"


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
    spill = temp_directory(warehouse)
    [(current,)] = con.execute("select current_setting('temp_directory')").fetchall()
    if not current or Path(current).resolve() != spill.resolve():
        con.execute(f"set temp_directory = {_literal(str(spill))}")


def dbt_environment(configured: str | None = None) -> dict[str, str]:
    """What dbt's profile reads for the same limit (dbt_project/profiles.yml); dbt's connection to the warehouse
    file spills into ``temp_directory`` by DuckDB's default."""
    return {MEMORY_LIMIT_VARIABLE: memory_limit(configured)}
