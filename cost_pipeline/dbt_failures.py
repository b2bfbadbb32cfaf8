"""When an error-severity dbt test fails in the night: its failing rows stored, the landing file and line of each
named, and rows that came straight from landing files quarantined so the night builds without them (issue 10).

A value that gets past the contract and then fails a dbt test is a defect of the contract. Until it is fixed, the
night must say where the value came from, not only which model it reached. The nightly build does not store
failures (a table per test per night); after a build in which tests failed, ``store_failing_rows`` runs those tests
again with ``--store-failures``. Each then writes its failing rows to ``audit``; on a model that carries
``source_file`` and ``source_line`` (every staging model of a landing source) those rows are the model's own rows,
provenance included (dbt_project/macros/failing_source_rows.sql). ``read_places`` reads them back.

When every failed test is on a staging model of a landing source and each failing row names its file and line
(``holdable``), one bad row does not cost the night: ``hold_rows`` moves those rows from raw to ``raw.quarantine``
(rule ``dbt:<test>``, the file ledger's counts moved with them, so rows in still equal rows staged plus quarantined)
and the nightly job builds again without them; the night's summary names them (``held_rows``). Only a source whose
rows stand alone (``Source.rows_stand_alone``: a request, a device sample, a timesheet entry, a training step, a
batch's trial round, a service invoice; not a register, price, ledger, rule, job or cloud bill that other rows are
read through) is held from, and only when each staging model then has exactly its failing rows fewer: another
delivery of the record would otherwise take the held row's place (a model that keeps one delivery of a record by a
key, its meta's ``record_key`` or the compared columns of identical lines, has every delivery of a failing record
held). A held row is left out as if the contract had quarantined it at ingest, with the other deliveries of its
record (an older copy; an invoice's accrual with its failing billed line, where a quarantine at ingest would have
let the accrual count). Held rows are tested again every night: a file with
held rows is read again, and a gone file's held rows go back into raw before the build
(``cost_pipeline.ingest.lib.warehouse.release_held_rows``). Otherwise ``failure_report`` is the run's error: per
test, what it checks, how many rows break it, and the first files and lines.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from cost_pipeline import duckdb_session
from cost_pipeline.dbt_setup import seed_partial_parse
from cost_pipeline.dbt_test_descriptions import describe_test
from cost_pipeline.ingest.lib.warehouse import HELD_RULE, quote, raw_columns
from cost_pipeline.ingest.registry import SOURCES

if TYPE_CHECKING:
    from dagster_dbt import DbtCliResource

# The message of a held row that is another delivery of a failing record (not itself the failing row): an older
# copy, or an invoice's accrual held with its failing billed line. Rows held before say "a newer delivery ...".
_DELIVERED = "another delivery of this record failed this dbt test"
_DELIVERED_LIKE = "%delivery of this record failed this dbt test%"
PLACES_SHOWN = 5  # landing file and line pairs named per failed test; the stored table holds every row
# A dbt test's asset check metadata: the table that keeps its failing rows, for a test that stores them every build.
STORED_FAILURES = "stored_failures"
# The extent tables sources write beside their raw tables (Source.extent): what each file covers, never held from.
_EXTENT_TABLES = {source.extent_table for source in SOURCES.values() if source.extent_table is not None}
# A raw row (alias r) whose file and line are among the failing rows' (temp table held).
_HELD = "exists (select 1 from held where held.source_file = r.source_file and held.source_line = r.source_line)"


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
    unplaced: int | None = None  # stored rows without a file and line; None when the rows have no such columns
    # The raw tables a staging model reads, when each is a source whose rows stand alone; else empty (not holdable).
    raw_tables: tuple[str, ...] = ()
    # The raw columns by which the staging model keeps one delivery of a record (its meta's record_key), if any: a
    # column's name, or an SQL expression of the raw row's columns (lower(request_id): an id compared case-folded).
    record_key: tuple[str, ...] = ()
    # For a model that keeps one of identical lines (identical_lines_once): the raw columns it does not compare (its
    # meta's identical_lines_ignore); every other raw column is then the record's key. None: not such a model.
    identical_lines_ignore: tuple[str, ...] | None = None
    # The tested model's compiled SQL in the build, if it ran, and how it is stored: the hold counts a table's rows
    # by that SQL from the raw tables (a table keeps the last build's rows until rebuilt), a view's as they are.
    model_sql: str | None = None
    materialized: str = "view"

    @property
    def holdable(self) -> bool:
        """Its failing rows are landing rows, each named by file and line: they can be quarantined."""
        return bool(self.raw_tables) and bool(self.rows) and bool(self.places) and self.unplaced == 0

    def line(self) -> str:
        """One paragraph: dbt's failure line, then what the test checks and where its failing rows came from."""
        head = f"Failure in test {self.name} ({self.path})"
        if self.rows is None:
            found = "its failing rows were not stored (see dbt's log)"
        elif self.unplaced is None:  # dbt's own result rows: one per failing value, group or total
            found = (
                f"the test returned {_rows(self.rows)} (failing values or groups, without their landing files); "
                f"stored in {self.stored}"
            )
        else:
            tested = f" of {self.model}" if self.model else ""
            breaks = f"{_rows(self.rows)}{tested} {'breaks' if self.rows == 1 else 'break'} it"
            if self.places:
                listed = ", ".join(f"{file} line {line}" for file, line in self.places)
                more = f" and {self.more_places} more" if self.more_places else ""
                found = f"{breaks}, from {listed}{more}; stored in {self.stored}"
            else:
                found = f"{breaks}, none with a landing file and line; stored in {self.stored}"
        return f"{head}\n  {self.rule}: {found}"


def _rows(count: int) -> str:
    return f"{count:,} row" + ("" if count == 1 else "s")


def failures_table(test: Mapping[str, Any]) -> str:
    """``schema.table`` where a dbt test (its manifest node) writes its failing rows when it stores them."""
    return f"{test['schema']}.{test['alias']}"


def stores_failures(test: Mapping[str, Any]) -> bool:
    """The test keeps its failing rows in a table every build (its config's ``store_failures``; a warning audit)."""
    config = test["config"]
    return bool(config.get("store_failures")) and config.get("store_failures_as") in (None, "table")


def failed_tests(run_results: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[FailedTest]:
    """The error-severity tests that failed in a dbt invocation (status ``fail``; a warning's is ``warn``), by file
    and name: dbt's threads finish them in any order."""
    failed = []
    compiled = {result["unique_id"]: result.get("compiled_code") for result in run_results.get("results", [])}
    for result in run_results.get("results", []):
        node = manifest["nodes"].get(result["unique_id"])
        if node is None or node["resource_type"] != "test" or result["status"] != "fail":
            continue
        tested = manifest["nodes"].get(node.get("attached_node") or "")
        parents = [manifest["sources"].get(parent) for parent in tested["depends_on"]["nodes"]] if tested else []
        # A source's extent table (Source.extent) is read beside its raw table and never held from.
        raw = [
            source["name"]
            for source in parents
            if source and source["source_name"] == "raw" and source["name"] not in _EXTENT_TABLES
        ]
        staging = tested is not None and tested["resource_type"] == "model" and tested["schema"] == "staging"
        meta = tested["config"].get("meta", {}) if tested else {}
        alone = bool(raw) and all(name in SOURCES and SOURCES[name].rows_stand_alone for name in raw)
        failed.append(
            FailedTest(
                name=node["name"],
                path=node["original_file_path"],
                rule=describe_test(node).rstrip("."),
                model=f"{tested['schema']}.{tested['alias']}" if tested else None,
                stored=failures_table(node),
                raw_tables=tuple(sorted(raw)) if staging and alone else (),
                record_key=tuple(meta.get("record_key", ())),
                identical_lines_ignore=(
                    tuple(meta["identical_lines_ignore"]) if "identical_lines_ignore" in meta else None
                ),
                model_sql=compiled.get(tested["unique_id"]) if tested else None,
                materialized=tested["config"].get("materialized", "view") if tested else "view",
            )
        )
    return sorted(failed, key=lambda test: (test.path, test.name))


def only_tests_failed(run_results: Mapping[str, Any]) -> bool:
    """No node of the invocation errored (a model that could not be built, a test that could not run)."""
    return not any(result["status"] == "error" for result in run_results.get("results", []))


def store_failing_rows(
    dbt: DbtCliResource, tests: Sequence[FailedTest], manifest: Any, target: Path, warehouse: Path
) -> set[str]:
    """Run ``tests`` again with their failing rows stored in ``audit``; return the names of those that failed (and so
    stored tonight's rows). Each test's table from an earlier night is dropped first, so none is read as tonight's.
    ``target`` is a folder of its own: the failed build's artifacts stay as they were."""
    with contextlib.closing(duckdb_session.connect(str(warehouse))) as con:
        for test in tests:
            schema, table = test.stored.split(".", 1)
            con.execute(f"drop table if exists {quote(schema)}.{quote(table)}")
    seed_partial_parse(target, warehouse)
    names = " ".join(sorted({test.name for test in tests}))  # one argument: dagster-dbt moves a second one
    rerun = dbt.cli(
        ["test", "--store-failures", "--select", names], manifest=manifest, target_path=target, raise_on_error=False
    ).wait()
    results = rerun.get_artifact("run_results.json").get("results", [])
    by_id = {unique_id: node["name"] for unique_id, node in manifest["nodes"].items()}
    return {by_id.get(result["unique_id"], "") for result in results if result["status"] == "fail"}


def read_places(warehouse: Path, tests: Sequence[FailedTest], stored: set[str]) -> list[FailedTest]:
    """Each test whose rows were stored (``stored``) with those rows counted and their first landing files and lines
    (when the rows carry them); the others as they were (their rows unread)."""
    try:
        con = duckdb_session.connect(str(warehouse), read_only=True)
    except duckdb.Error:
        return list(tests)
    try:
        return [_places(con, test) if test.name in stored else test for test in tests]
    finally:
        con.close()


def _places(con: duckdb.DuckDBPyConnection, test: FailedTest) -> FailedTest:
    schema, table = test.stored.split(".", 1)
    relation = f"{quote(schema)}.{quote(table)}"
    try:
        columns = {row[0] for row in con.execute(f"describe {relation}").fetchall()}
        [(rows,)] = con.execute(f"select count(*) from {relation}").fetchall()
        if not {"source_file", "source_line"} <= columns:
            return replace(test, rows=rows)
        places = con.execute(
            f"select distinct source_file, source_line from {relation} "
            "where source_file is not null and source_line is not null order by source_file, source_line"
        ).fetchall()
        [(unplaced,)] = con.execute(
            f"select count(*) from {relation} where source_file is null or source_line is null"
        ).fetchall()
    except duckdb.Error:
        return test
    shown = tuple((str(file), int(line)) for file, line in places[:PLACES_SHOWN])
    return replace(test, rows=rows, places=shown, more_places=len(places) - len(shown), unplaced=unplaced)


class HoldRefused(Exception):
    """The failing rows were not held: holding them would not have left exactly them out."""


def _count(con: duckdb.DuckDBPyConnection, test: FailedTest) -> int:
    """The rows of the model ``test`` is on, as raw now makes them: a view's relation, a table's compiled SQL
    (``model_sql``). An incremental table's compiled SQL is of the periods the build made again (stg_serving__requests:
    the months whose request logs changed, macros/request_months.sql), where a new file's failing rows are: a failing
    row of a month it kept is not counted, so the count does not fall by exactly the failing rows and nothing is
    held. Any other model, or a table the run did not build, cannot be counted: HoldRefused."""
    if test.materialized == "view":
        schema, table = str(test.model).split(".", 1)
        [(rows,)] = con.execute(f"select count(*) from {quote(schema)}.{quote(table)}").fetchall()
        return rows
    if test.materialized not in ("table", "incremental"):
        raise HoldRefused(f"{test.model} is {test.materialized}: its rows cannot be counted from raw")
    if not test.model_sql:
        raise HoldRefused(
            f"{test.model} is a table that this run did not build: materialise it with its checks, so that its rows "
            "are counted from raw"
        )
    sql = test.model_sql.rstrip().rstrip(";")
    [(rows,)] = con.execute(f"select count(*) from (\n{sql}\n) as model_rows").fetchall()
    return rows


# A raw row's number among the lines of its file identical in the compared columns, by line, as
# identical_lines_once numbers them (dbt_project/macros/newest_delivery.sql).
_COPY_NUMBER = "copy_number"


def _key_part(key: str) -> str:
    """One part of a record key as SQL over the raw row ``r``: a column by its name, else the expression itself (a
    staging model's meta, such as lower(request_id))."""
    return f"r.{quote(key)}" if key.isidentifier() else key


def _records(con: duckdb.DuckDBPyConnection, source: str, test: FailedTest) -> tuple[str, tuple[str, ...]]:
    """The raw rows of ``source`` as the tested staging model tells records apart, and the columns that name one
    record: ``raw.<source>`` and the model's record_key; or for a model that keeps one of identical lines, each raw
    row with its copy number within its file, named by every raw column the model compares (not its place, not the
    ignored ones) and that number: an entry logged twice in one export is two records."""
    raw = f"raw.{quote(source)}"
    if test.identical_lines_ignore is None:
        return raw, test.record_key
    skipped = {"source_file", "source_line", "file_sha256", *test.identical_lines_ignore}
    compared = tuple(name for name, _ in raw_columns(con, source) if name not in skipped)
    numbered = (
        f"(select r.*, row_number() over (partition by {', '.join(quote(c) for c in compared)}, source_file "
        f"order by source_line) as {_COPY_NUMBER} from {raw} as r)"
    )
    return numbered, (*compared, _COPY_NUMBER)


def hold_rows(con: duckdb.DuckDBPyConnection, tests: Sequence[FailedTest]) -> dict[str, int]:
    """Move the raw rows each test's stored rows came from (by raw table, file and line) to ``raw.quarantine``,
    with rule ``dbt:<test>``, and their counts in the file ledger from staged to quarantined; in one transaction.
    A staging model that keeps one delivery of a record by a key (its meta's ``record_key``, or every compared column
    of a model that keeps one of identical lines: its meta's ``identical_lines_ignore``) has every delivery of a
    failing row's record held with it: an older one would otherwise take the held row's place, and its other values
    would count. A row that fails several tests is held under the first; its message names the others. Then each
    tested staging model must have exactly its failing rows fewer, or nothing moves (``HoldRefused``). Returns how
    many raw rows moved, by source."""
    moved: dict[str, int] = {}
    held_by_model: dict[str, set[tuple[str, int]]] = {}
    con.execute("begin transaction")
    try:
        counted = {test.model: test for test in tests if test.model}  # one count per model, not per test
        before = {model: _count(con, test) for model, test in counted.items()}
        # The raw rows held by this call so far: one that fails a later test too was held under the first; its
        # quarantine message names the others.
        con.execute("create or replace temp table held_tonight (source varchar, source_file varchar, line bigint)")
        for test in tests:
            schema, table = test.stored.split(".", 1)
            con.execute(
                "create or replace temp table held as select distinct source_file, source_line "
                f"from {quote(schema)}.{quote(table)} where source_file is not null and source_line is not null"
            )
            held_by_model.setdefault(str(test.model), set()).update(con.execute("select * from held").fetchall())
            for source in test.raw_tables:
                raw = f"raw.{quote(source)}"
                con.execute(
                    "update raw.quarantine as q set message = message || ? where q.source = ? "
                    f"and starts_with(q.rule, '{HELD_RULE}') and exists "
                    "(select 1 from held_tonight as t join held as h on h.source_file = t.source_file "
                    "and h.source_line = t.line where t.source = q.source and t.source_file = q.source_file "
                    "and t.line = q.line)",
                    [f"; it failed dbt test {test.name} too", source],
                )
                # The rows to hold: the failing ones, or every delivery of their records when staging keeps one by
                # a key (an older one would otherwise take a held row's place); the quarantine and the ledger are
                # written from them.
                records, record_key = _records(con, source, test)
                if not record_key:
                    con.execute(f"create or replace temp table held_raw as select * from {raw} as r where {_HELD}")
                else:
                    parts = [_key_part(c) for c in record_key]
                    keys = ", ".join(f"{part} as record_key_{n}" for n, part in enumerate(parts))
                    same = " and ".join(f"k.record_key_{n} is not distinct from {part}" for n, part in enumerate(parts))
                    con.execute(
                        f"create or replace temp table held_records as select distinct {keys} "
                        f"from {records} as r where {_HELD}"
                    )
                    columns = f"* exclude ({_COPY_NUMBER})" if _COPY_NUMBER in record_key else "*"
                    con.execute(
                        f"create or replace temp table held_raw as select {columns} from {records} as r "
                        f"where exists (select 1 from held_records as k where {same})"
                    )
                failed = f"{test.rule} (passed the contract, failed this dbt test)"
                delivered = f"{test.rule} (passed the contract; {_DELIVERED})"
                [(inserted,)] = con.execute(
                    "insert into raw.quarantine (source, source_file, file_sha256, line, rule, message, raw_text) "
                    "select ?, r.source_file, f.file_sha256, r.source_line, ?, "
                    f"case when {_HELD} then ? else ? end, cast(to_json(r) as varchar) "
                    "from held_raw as r join raw.ingested_files as f on f.source = ? and f.source_file = r.source_file",
                    [source, HELD_RULE + test.name, failed, delivered, source],
                ).fetchall()
                con.execute(
                    "update raw.ingested_files as f set rows_staged = rows_staged - held_here.rows, "
                    "rows_quarantined = rows_quarantined + held_here.rows from (select source_file, count(*) as rows "
                    "from held_raw group by source_file) as held_here "
                    "where f.source = ? and f.source_file = held_here.source_file",
                    [source],
                )
                con.execute(
                    "insert into held_tonight select ?, source_file, source_line from held_raw",
                    [source],
                )
                [(deleted,)] = con.execute(
                    f"delete from {raw} as r where exists (select 1 from held_raw as h "
                    "where h.source_file = r.source_file and h.source_line = r.source_line)"
                ).fetchall()
                if deleted != inserted:
                    raise HoldRefused(
                        f"{deleted} row(s) of raw.{source} matched, {inserted} of them with a file ledger row"
                    )
                moved[source] = moved.get(source, 0) + deleted
        for model, held in held_by_model.items():
            fewer = before[model] - _count(con, counted[model])
            if fewer != len(held):
                raise HoldRefused(
                    f"holding {len(held)} row(s) would leave {fewer} fewer in {model} (a record delivered again in "
                    "another file would take a held row's place)"
                )
        con.execute("drop table if exists held")
        con.execute("drop table if exists held_raw")
        con.execute("drop table if exists held_records")
        con.execute("drop table if exists held_tonight")
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return moved


def held_rows(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, int, int, str]]:
    """The rows raw holds back after a dbt test: (source, test, rows that failed it, other deliveries of their
    records held with them, first failing file and line, or first held one when none failed tonight), by source
    and test."""
    delivered = f"message like '{_DELIVERED_LIKE}'"
    return con.execute(
        "select source, substr(rule, ?) as test, count(*) filter (where not " + delivered + "), "
        "count(*) filter (where " + delivered + "), "
        "coalesce(first(source_file || ' line ' || line order by source_file, line) filter (where not "
        + delivered
        + "), first(source_file || ' line ' || line order by source_file, line)) "
        "from raw.quarantine where starts_with(rule, ?) group by source, rule order by source, rule",
        [len(HELD_RULE) + 1, HELD_RULE],
    ).fetchall()


def failure_report(tests: Sequence[FailedTest], dbt_error: str, note: str = "") -> str:
    """The run's error: each failed test's paragraph, then dbt's own message (a model's error, if any, is there).
    The first paragraph says how many more tests failed, and ``note``: a one-line summary shows only it."""
    others = len(tests) - 1
    more = f"; {others} more test{'s' if others > 1 else ''} failed" if others else ""
    more += f"; {note}" if note else ""
    return "\n".join(test.line() + (more if i == 0 else "") for i, test in enumerate(tests)) + "\n\n" + dbt_error
