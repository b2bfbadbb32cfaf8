"""What the benchmarks share: a checked ingest timed against a bare typed DuckDB load of the same file.

Both timings and their ratio are measured in the same run on the same machine, so the figure that matters (what
validation and line tracking cost over a bare load) does not depend on the machine.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from cost_pipeline import duckdb_session
from cost_pipeline.ingest.lib.warehouse import IngestReport, connect


def compare(
    folder: str,
    write: Callable[[Path, int], Path],
    baseline_sql: str,
    load: Callable[[duckdb.DuckDBPyConnection, Path], IngestReport],
) -> None:
    """Write ``--rows`` rows into ``landing/<folder>`` (``write`` returns the file), then time ``baseline_sql``
    (the file is its one parameter) and ``load`` (on a connection locked down to the landing folder); with
    ``--again``, ``load`` once more into the same warehouse: a night with nothing new, every file reused."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--again", action="store_true")
    args, _ = parser.parse_known_args()  # a benchmark's own options are its own
    with tempfile.TemporaryDirectory() as tmp:
        landing = Path(tmp) / "landing"
        (landing / folder).mkdir(parents=True)
        data = write(landing / folder, args.rows)

        baseline_con = duckdb_session.connect(str(Path(tmp) / "baseline.duckdb"))
        started = time.perf_counter()
        baseline_con.execute(baseline_sql, [str(data)])
        baseline = time.perf_counter() - started
        baseline_con.close()

        con = connect(Path(tmp) / "checked.duckdb", readable_dir=landing)
        started = time.perf_counter()
        report = load(con, landing)
        checked = time.perf_counter() - started
        con.close()

        again = None
        if args.again:
            con = connect(Path(tmp) / "checked.duckdb", readable_dir=landing)
            started = time.perf_counter()
            load(con, landing)
            again = time.perf_counter() - started
            con.close()

    print(f"rows: {args.rows:,}  staged: {report.rows_staged:,}  quarantined: {report.rows_quarantined:,}")
    print(f"baseline typed load: {baseline:.2f} s   checked ingest: {checked:.2f} s   ratio: {checked / baseline:.2f}x")
    if again is not None:
        print(f"the same folder loaded again (nothing new): {again:.2f} s")
