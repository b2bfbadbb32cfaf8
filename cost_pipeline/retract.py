"""``cost-pipeline retract FILE --reason TEXT``: take one landing file's rows out of the figures, on the record.

Raw keeps the rows of a file that is gone from the landing folder (append-only by file), so deleting a file takes
nothing out. Retracting it does: a row in ``raw.retractions`` (source, file, sha256, rows, reason, who, when).
The next night loads no rows from those bytes under that name and keeps none of them (the same bytes under another
name are quarantined whole, ``retracted_content``: ``warehouse.retracted_contents``), and the cost history gets a
new version for each batch whose figures change, named by the retraction in ``history.snp_batch_cost_retractions``.
A later delivery under the same name with other bytes is a redelivery and loads again.

Which batches the file fed is read now, from the relations last night built (the source's ``batch_lineage``), into
``raw.retraction_batches``: the night after names the retraction on those batches' new versions only, not on a
version another file caused that night. A source whose rows are not per batch (prices, ledgers) records none, and
its retraction is named on every version of that night.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from cost_pipeline.command_error import CommandError
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import sources

UNKNOWN_FILE_EXIT = 6


class RetractError(CommandError):
    """A retraction that cannot be made; the message is one line, ``exit_code`` the CLI's."""


@dataclass(frozen=True)
class Retracted:
    source: str
    source_file: str
    file_sha256: str
    rows: int


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _batches_fed(con: duckdb.DuckDBPyConnection, source: str, source_file: str) -> list[str | None]:
    """The batches ``source_file`` fed in last night's relations; ``[None]`` if it fed none, ``[]`` if that cannot
    be told (a source not per batch, or a warehouse no night has built the relations of)."""
    declared = sources().get(source)
    lineage = declared.batch_lineage if declared is not None else None
    if lineage is None:
        return []
    try:
        rows = con.execute(
            f"select distinct batch_id from ({lineage}) as fed where source_file = ? and batch_id is not null "
            "order by batch_id",
            [source_file],
        ).fetchall()
    except duckdb.CatalogException:
        return []
    return [batch for (batch,) in rows] or [None]


def retract(warehouse: Path, source_file: str, reason: str | None, by: str | None = None) -> list[Retracted]:
    """Record the retraction of ``source_file`` (landing-relative, as the ledger names it) for every source that
    loaded it; raises ``RetractError`` for no reason (exit 2) or a file the ledger does not hold (exit 6)."""
    why = (reason or "").strip()
    if not why:
        raise RetractError("retract needs --reason TEXT: say why the file's rows leave the figures", 2)
    name = Path(source_file).as_posix().removeprefix("./")
    con = connect(warehouse)
    try:
        ledger = con.execute(
            "select source, file_sha256, rows_staged from raw.ingested_files as loaded "
            "where source_file = ? and duplicate_of is null and not exists (select 1 from raw.retractions as done "
            "where done.source = loaded.source and done.source_file = loaded.source_file "
            "and done.file_sha256 = loaded.file_sha256) order by source",
            [name],
        ).fetchall()
        if not ledger:
            done = con.execute(
                "select min(retracted_at) from raw.retractions where source_file = ?", [name]
            ).fetchall()[0][0]
            told = f"it was retracted on {done:%Y-%m-%d %H:%M} UTC" if done else "no night loaded a file so named"
            raise RetractError(f"unknown file {name}: {told} (names as in raw.ingested_files)", UNKNOWN_FILE_EXIT)
        retracted = [Retracted(source, name, sha, int(rows)) for source, sha, rows in ledger]
        at = datetime.now(UTC).replace(tzinfo=None)
        fed = [[r.source, name, r.file_sha256, batch] for r in retracted for batch in _batches_fed(con, r.source, name)]
        con.execute("begin transaction")
        try:
            con.executemany(
                "insert into raw.retractions values (?, ?, ?, ?, ?, ?, ?)",
                [[r.source, r.source_file, r.file_sha256, r.rows, why, by or _who(), at] for r in retracted],
            )
            if fed:  # none: no source it came from is traced per batch
                con.executemany("insert into raw.retraction_batches values (?, ?, ?, ?)", fed)
            con.execute("commit")
        except duckdb.Error:
            con.execute("rollback")
            raise
    finally:
        con.close()
    return retracted
