"""Where the landing files are and where the warehouse lives; configured from the environment at launch."""

import contextlib
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb

from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.run_lock import warehouse_run_lock


class LandingZone(dg.ConfigurableResource):
    """The landing folder, one sub-folder per source (registry/, scheduler/, telemetry/, steps/, ledger/)."""

    path: str

    @property
    def root(self) -> Path:
        return Path(self.path).resolve()


class Warehouse(dg.ConfigurableResource):
    """The DuckDB warehouse file. A connection is opened per step and closed at once: DuckDB allows one writer.

    A run that uses the warehouse holds its run lock (``cost_pipeline.run_lock``) from start to end, whoever
    launched it - the CLI, the webserver, the nightly schedule: a second run is refused before it writes anything.
    Within the CLI's thread the lock is re-entrant, so ``cost-pipeline run`` (which takes it first) goes through.
    """

    path: str
    # DuckDB memory limit of every warehouse connection of the run - ingest, dbt and publishing alike - such as
    # 4GiB or 500MB; unset: COST_DUCKDB_MEMORY_LIMIT, else 3GiB (cost_pipeline.duckdb_memory). Run config:
    # resources: {warehouse: {config: {memory_limit: 2GiB}}}.
    memory_limit: str | None = None

    @contextlib.contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator["Warehouse"]:
        with warehouse_run_lock(self.file), super().yield_for_execution(context) as resource:
            yield resource

    @property
    def file(self) -> Path:
        return Path(self.path).resolve()

    def connect(self, readable: str | Path | None = None) -> duckdb.DuckDBPyConnection:
        """Open the warehouse; with ``readable`` (the landing root, for ingest) DuckDB may open files only there.

        An ingest step passes ``readable=landing.root``: the connection is then locked down
        (``cost_pipeline.ingest.lib.warehouse.lock_down``) and cannot read outside the landing folder, copy out,
        attach, install or load extensions, or change a setting.
        """
        return connect(self.file, readable_dir=readable, memory_limit=self.memory_limit)
