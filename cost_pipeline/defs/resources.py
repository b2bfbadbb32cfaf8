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

    def connect(self, readable: str | Path | None = None) -> duckdb.DuckDBPyConnection:
        """Open the warehouse; with ``readable`` (the landing root, for ingest) DuckDB may open files only there.

        An ingest step passes ``readable=landing.root``: the connection is then locked down
        (``cost_pipeline.ingest.warehouse.lock_down``) and cannot read outside the landing folder, copy out,
        attach, install or load extensions, or change a setting.
        """
        return connect(self.file, readable_dir=readable)
