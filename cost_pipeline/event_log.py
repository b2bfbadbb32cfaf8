"""Dagster's SQLite event log, written through kept connections: the same files, a third of a night less.

Dagster's ``SqliteEventLogStorage`` builds a SQLAlchemy engine, opens SQLite, commits with a full fsync and closes
again for every event it stores. A demo night stores about 2,300 events (every dbt test is an asset check, and each
check is planned, then evaluated, and mirrored into the index database), which cost about 20 s of its 65 s. This
storage writes the very same databases (one per run, plus ``index.db``) the same way, except:

- one engine per database is kept for as long as the instance is open (the few most recent; runs come one at a
  time), instead of one per event;
- a table of the index, once found, is not looked up again before every event (``has_table``);
- commits are not fsynced one by one (``synchronous=NORMAL``). Dagster creates every one of these databases in
  write-ahead-log mode, where that setting cannot damage a database: a process killed mid-night loses nothing, and
  a power cut can lose the last events written before it, never the warehouse (its ledger is fsynced on its own).

``dagster dev`` and the daemon keep Dagster's own storage on the same folder (``dagster.yaml`` is not changed),
and read everything this storage wrote: the on-disk format is Dagster's. A ``dagster.yaml`` that names a storage
of its own (Postgres, say) is used as it is (``cost_pipeline.dagster_home``).
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

# Engines kept open at once: the index, the run being written, and a few that were read (a check that compares
# with the previous run reads that run's database).
KEPT_ENGINES = 4


def _commit_without_fsync(connection: sqlite3.Connection, _record: Any) -> None:
    connection.execute("PRAGMA synchronous=NORMAL")


class KeptConnectionEventLogStorage(SqliteEventLogStorage):
    """``SqliteEventLogStorage`` that keeps its engines (see the module docstring)."""

    def __init__(self, base_dir: str, inst_data=None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()  # before Dagster's __init__, which writes the index
        self._tables_found: set[str] = set()
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> KeptConnectionEventLogStorage:  # type: ignore[override]
        return cls(inst_data=inst_data, **config_value)

    def _engine(self, shard: str) -> Engine:
        engine = self._engines.pop(shard, None)
        if engine is None:
            engine = create_engine(
                self.conn_string_for_shard(shard), connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS}, pool_size=1
            )
            event.listen(engine, "connect", _commit_without_fsync)
        self._engines[shard] = engine
        while len(self._engines) > KEPT_ENGINES:
            _, oldest = self._engines.popitem(last=False)
            oldest.dispose()
        return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as connection, connection.begin():
                yield connection

    def has_table(self, table_name: str) -> bool:
        """Dagster asks whether a table of the index exists before it stores each asset check result or tagged
        event, through a new engine each time. A table that exists stays (Dagster's migrations add tables, never
        drop them), so one found is remembered; one not found is asked again."""
        if table_name not in self._tables_found and super().has_table(table_name):
            self._tables_found.add(table_name)
        return table_name in self._tables_found

    def dispose(self) -> None:
        with self._db_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()
        super().dispose()
