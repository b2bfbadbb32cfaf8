"""Where the landing files are and where the warehouse lives; configured from the environment at launch."""


from pathlib import Path

import dagster as dg
import duckdb

from cost_pipeline.ingest.warehouse import connect


class LandingZone(dg.ConfigurableResource):
    """The landing folder, one sub-folder per source (registry/, scheduler/, telemetry/, steps/, ledger/)."""

    path: str

    @property
    def root(self) -> Path:
        return Path(self.path).resolve()


class Warehouse(dg.ConfigurableResource):
    """The DuckDB warehouse file. A connection is opened per step and closed at once: DuckDB allows one writer."""

    path: str

    @property
    def file(self) -> Path:
        return Path(self.path).resolve()

    def connect(self) -> duckdb.DuckDBPyConnection:
        return connect(self.file)
