"""``cost-pipeline retract FILE --reason TEXT``: take one landing file's rows out of the figures, on the record.

Raw keeps the rows of a file that is gone from the landing folder (append-only by file), so deleting a file takes
nothing out. Retracting it does: a row in ``raw.retractions`` (source, file, sha256, rows, reason, who, when).
The next night loads no rows from those bytes under that name and keeps none of them (the same bytes under another
name are quarantined whole, ``retracted_content``: ``warehouse.retracted_contents``), and the cost history gets a
new version for each batch whose figures change, named by the retraction in ``history.snp_batch_cost_retractions``.
A later delivery under the same name with other bytes is a redelivery and loads again.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from cost_pipeline.command_error import CommandError
from cost_pipeline.ingest.lib.warehouse import connect

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
            ).fetchone()[0]
            told = f"it was retracted on {done:%Y-%m-%d %H:%M} UTC" if done else "no night loaded a file so named"
            raise RetractError(f"unknown file {name}: {told} (names as in raw.ingested_files)", UNKNOWN_FILE_EXIT)
        retracted = [Retracted(source, name, sha, int(rows)) for source, sha, rows in ledger]
        at = datetime.now(UTC).replace(tzinfo=None)
        con.execute("begin transaction")
        try:
            con.executemany(
                "insert into raw.retractions values (?, ?, ?, ?, ?, ?, ?)",
                [[r.source, r.source_file, r.file_sha256, r.rows, why, by or _who(), at] for r in retracted],
            )
            con.execute("commit")
        except duckdb.Error:
            con.execute("rollback")
            raise
    finally:
        con.close()
    return retracted
