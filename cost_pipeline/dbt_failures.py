"""When an error-severity dbt test fails in the night: its failing rows stored, and the landing file and line of each
named in the run's error (issue 10).

A value that gets past the contract and then fails a dbt test is a defect of the contract. Until it is fixed, the
night must say where the value came from, not only which model it reached. The nightly build does not store
failures (a table per test per night); after a build in which tests failed, ``store_failing_rows`` runs those tests
again with ``--store-failures``. Each then writes its failing rows to ``audit.<test>``; on a model that carries
``source_file`` and ``source_line`` (every staging model of a landing source) those rows are the model's own rows,
provenance included (dbt_project/macros/failing_source_rows.sql). ``failure_report`` reads them back and says, per
test, what it checks, how many rows break it, and the first files and lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb
from dagster_dbt import DbtCliResource

from cost_pipeline import duckdb_session
from cost_pipeline.dbt_test_descriptions import describe_test
from cost_pipeline.ingest.lib.warehouse import quote

PLACES_SHOWN = 5  # landing file and line pairs named per failed test; the stored table holds every row


@dataclass(frozen=True)
class FailedTest:
    """A dbt test that failed, as the error names it: dbt's own `Failure in test <name> (<file>)` first."""

    name: str
    path: str  # the yml or SQL file the test is declared in, relative to the dbt project
    rule: str  # what it checks, in words
    model: str | None  # schema.table of the tested model, when the test is on one
    stored: str  # audit.<table> where its failing rows are stored
    rows: int | None = None  # failing rows stored; None when the table could not be read
    places: tuple[tuple[str, int], ...] = ()  # the first (source_file, source_line) of those rows
    more_places: int = 0  # further distinct places, not listed

    def line(self) -> str:
        """One paragraph: dbt's failure line, then what the test checks and where its failing rows came from."""
        head = f"Failure in test {self.name} ({self.path})"
        tested = f" of {self.model}" if self.model else ""
        if self.rows is None:
            found = f"its failing rows could not be read back from {self.stored}"
        elif self.places:
            listed = ", ".join(f"{file} line {line}" for file, line in self.places)
            more = f" and {self.more_places} more" if self.more_places else ""
            found = f"{_rows(self.rows)}{tested} break it, from {listed}{more}; all in {self.stored}"
        else:
            found = f"{_rows(self.rows)}{tested} break it (no landing file: the rows are built); all in {self.stored}"
        return f"{head}\n  {self.rule}: {found}"


def _rows(count: int) -> str:
    return f"{count:,} row" + ("" if count == 1 else "s")


def failed_tests(run_results: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[FailedTest]:
    """The error-severity tests that failed in a dbt invocation (status ``fail``; a warning's is ``warn``), by file
    and name: dbt's threads finish them in any order."""
    failed = []
    for result in run_results.get("results", []):
        node = manifest["nodes"].get(result["unique_id"])
        if node is None or node["resource_type"] != "test" or result["status"] != "fail":
            continue
        tested = manifest["nodes"].get(node.get("attached_node") or "")
        failed.append(
            FailedTest(
                name=node["name"],
                path=node["original_file_path"],
                rule=describe_test(node).rstrip("."),
                model=f"{tested['schema']}.{tested['alias']}" if tested else None,
                stored=f"{node['schema']}.{node['alias']}",
            )
        )
    return sorted(failed, key=lambda test: (test.path, test.name))


def store_failing_rows(dbt: DbtCliResource, tests: Sequence[FailedTest], manifest: Any, target: Path) -> None:
    """Run ``tests`` again, storing their failing rows in ``audit`` (dbt exits 1 again: they still fail)."""
    names = " ".join(sorted({test.name for test in tests}))  # one argument: dagster-dbt moves a second one
    dbt.cli(
        ["test", "--store-failures", "--select", names],
        manifest=manifest,
        target_path=target,
        raise_on_error=False,
    ).wait()


def read_places(warehouse: Path, tests: Sequence[FailedTest]) -> list[FailedTest]:
    """Each test with its stored rows counted and their first landing files and lines (when the rows carry them)."""
    try:
        con = duckdb_session.connect(str(warehouse), read_only=True)
    except duckdb.Error:
        return list(tests)
    try:
        return [_places(con, test) for test in tests]
    finally:
        con.close()


def _places(con: duckdb.DuckDBPyConnection, test: FailedTest) -> FailedTest:
    schema, table = test.stored.split(".", 1)
    relation = f"{quote(schema)}.{quote(table)}"
    try:
        columns = {row[0] for row in con.execute(f"describe {relation}").fetchall()}
        (rows,) = con.execute(f"select count(*) from {relation}").fetchone()
        if not {"source_file", "source_line"} <= columns:
            return replace(test, rows=rows)
        places = con.execute(
            f"select distinct source_file, source_line from {relation} "
            "where source_file is not null and source_line is not null order by source_file, source_line"
        ).fetchall()
    except duckdb.Error:
        return test
    shown = tuple((str(file), int(line)) for file, line in places[:PLACES_SHOWN])
    return replace(test, rows=rows, places=shown, more_places=len(places) - len(shown))


def failure_report(tests: Sequence[FailedTest], dbt_error: str) -> str:
    """The run's error: each failed test's paragraph, then dbt's own message (a model's error, if any, is there).
    The first paragraph says how many more tests failed: a one-line summary shows only it."""
    others = len(tests) - 1
    more = f"; {others} more test{'s' if others > 1 else ''} failed" if others else ""
    return "\n".join(test.line() + (more if i == 0 else "") for i, test in enumerate(tests)) + "\n\n" + dbt_error
