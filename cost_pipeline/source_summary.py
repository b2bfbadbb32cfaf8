"""The CLI's closing summary: per source, its files, rows in, staged and quarantined; then the files no source read.

One line a source (from the file ledger, ``raw.ingested_files``), in the registry's order, then one line for the
ignored files (``raw.ignored_files``) and, when there are any, one for the files gone from the landing folder whose
rows raw keeps (``missing_since``), and one ``stale:`` line per source whose load failed tonight
(``raw.source_failures``): raw keeps its rows of its last good night, so its figures are as of then; one
``incomplete:`` line per FOCUS export run whose manifest lists a data file not loaded, or run folder without a
manifest yet (it replaces no older run).
Then one ``held:`` line per source and dbt test whose failing landing rows were quarantined after the build
(``cost_pipeline.dbt_failures``): the contract passed them, so the contract has a defect. The sources that had rows
and staged none (every row quarantined), those whose figures are stale and those with held rows are returned, so the
CLI can end non-zero naming them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb

from cost_pipeline import duckdb_session
from cost_pipeline.dbt_failures import held_rows
from cost_pipeline.ingest.registry import SOURCES

IGNORED_NAMED = 5  # ignored files named on the summary line; raw.ignored_files holds them all
_HEADINGS = (("source", 24), ("files", 6), ("rows in", 11), ("staged", 11), ("quarantined", 12))


def _line(cells: tuple, out) -> None:
    text = [str(cells[0]).ljust(_HEADINGS[0][1])]
    text += [
        (f"{c:,}" if isinstance(c, int) else str(c)).rjust(w)
        for c, (_, w) in zip(cells[1:], _HEADINGS[1:], strict=True)
    ]
    print("  " + " ".join(text), file=out)


@dataclass
class SummaryFindings:
    """What the summary found that the exit code reports."""

    all_quarantined: list[str] = field(default_factory=list)  # sources with rows, every one quarantined
    stale: list[str] = field(default_factory=list)  # sources whose load failed tonight: last good night's rows
    held: list[str] = field(default_factory=list)  # sources with rows quarantined after a failed dbt test


def source_failures(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, datetime | None]]:
    """The sources whose load failed tonight (``raw.source_failures``): name, error, last good load."""
    try:
        return con.execute("select source, error, last_good_load from raw.source_failures order by source").fetchall()
    except duckdb.CatalogException:  # a warehouse written before failed loads were recorded
        return []


def incomplete_runs(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int | None, int]]:
    """The FOCUS export runs some of whose listed data files raw holds no row of, and the run folders whose manifest
    has not come (stg_billing__focus_charges reads such a run as replacing nothing): run id (a folder for the
    latter), files its manifest lists (None: no manifest), files loaded."""
    try:
        return con.execute(
            "select export_run_id, max(export_run_files), count(distinct source_file) from raw.billing_focus "
            "where export_run_id is not null group by export_run_id, export_run_manifest "
            "having max(export_run_files) is null or count(distinct source_file) < max(export_run_files) "
            "order by export_run_id"
        ).fetchall()
    except duckdb.Error:  # no FOCUS rows loaded, or a warehouse written before export runs were kept
        return []


def as_of(last_good_load: datetime | None) -> str:
    """The night a stale source's rows are from, in words."""
    return f"{last_good_load:%Y-%m-%d %H:%M} UTC" if last_good_load else "no night (it never loaded)"


def print_source_summary(warehouse: Path, out=None) -> SummaryFindings:
    """Print the per-source summary (to stdout unless ``out``); return the sources whose every row was
    quarantined and those whose figures are stale."""
    out = sys.stdout if out is None else out
    con = duckdb_session.connect(str(warehouse), read_only=True)
    try:
        try:
            ledger = {
                source: counts
                for source, *counts in con.execute(
                    "select source, count(*), sum(rows_in), sum(rows_staged), sum(rows_quarantined) "
                    "from raw.ingested_files group by source"
                ).fetchall()
            }
        except duckdb.CatalogException:
            return SummaryFindings()
        try:
            missing = con.execute(
                "select source_file, min(missing_since) from raw.ingested_files where missing_since is not null "
                "group by source_file order by source_file"
            ).fetchall()
        except duckdb.Error:  # a warehouse written before raw kept the rows of files gone
            missing = []
        try:
            ignored = [
                name
                for (name,) in con.execute("select source_file from raw.ignored_files order by source_file").fetchall()
            ]
        except duckdb.CatalogException:
            ignored = []
        failures = source_failures(con)
        held = held_rows(con)
        incomplete = incomplete_runs(con)
    finally:
        con.close()
    print("\nPer source (raw.ingested_files):", file=out)
    _line(tuple(h for h, _ in _HEADINGS), out)
    findings = SummaryFindings()
    for name in [*SOURCES, *sorted(set(ledger) - set(SOURCES))]:
        files, rows_in, staged, quarantined = (int(v or 0) for v in ledger.get(name, (0, 0, 0, 0)))
        _line((name, files, rows_in, staged, quarantined), out)
        if rows_in > 0 and staged == 0:
            findings.all_quarantined.append(name)
    if ignored:
        named = ", ".join(ignored[:IGNORED_NAMED]) + (", ..." if len(ignored) > IGNORED_NAMED else "")
        print(f"  ignored: {len(ignored)} file(s) match no source (raw.ignored_files): {named}", file=out)
    else:
        print("  ignored: no file (every landing file matches a source)", file=out)
    if missing:
        named = ", ".join(f"{name} (since {since:%Y-%m-%d %H:%M} UTC)" for name, since in missing[:IGNORED_NAMED])
        more = ", ..." if len(missing) > IGNORED_NAMED else ""
        print(
            f"  missing: {len(missing)} file(s) gone from the landing folder, their rows kept (see "
            f"`cost-pipeline retract`): {named}{more}",
            file=out,
        )
    for run, listed, loaded in incomplete:
        said = f"run {run} lists {listed:,} data file(s)" if listed is not None else f"run folder {run} has no manifest"
        print(
            f"  incomplete: FOCUS export {said}, {loaded:,} loaded: it replaces no older run (nor counts beside one) "
            "until every file its manifest lists is loaded",
            file=out,
        )
    for name, error, since in failures:
        print(f"  stale: figures from {name} are as of {as_of(since)}; tonight's load failed: {error}", file=out)
        findings.stale.append(name)
    for name, test, rows, deliveries, first in held:
        also = f", with {deliveries:,} other deliver{'y' if deliveries == 1 else 'ies'} of them" if deliveries else ""
        print(
            f"  held: {rows:,} row(s) of {name} passed the contract and failed dbt test {test} (first: {first}){also}; "
            "quarantined, left out of the marts built tonight",
            file=out,
        )
        if name not in findings.held:
            findings.held.append(name)
    return findings
