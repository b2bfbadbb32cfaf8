"""Publishing the marts for BI readers (R20): two DuckDB files beside the warehouse, each swapped in atomically.

- ``<warehouse stem>.finance.duckdb``: every table of schema ``marts``, every column.
- ``<warehouse stem>.engineering.duckdb``: the same tables without the confidential columns that the definitions
  contract lists (``confidential:`` in ``contract/definitions_v*.yaml``): people's cost rates and anything derived
  per person, and contract discounts; figures of groups of fewer than three people (``small_groups:``) are null,
  and so is every figure a reader could recover one from: a total over a blanked part (``complements:``), a
  history version that differs from a published one by fewer than three people (``over_versions:``), and the
  hash of a file holding confidential values (``confidential_sources:``). docs/confidentiality.md states the
  guarantee. DuckDB has no GRANT, so the split is physical.

Both files also hold ``main.inputs``: the warehouse's file ledger (source, file, sha256, row counts), so a reader
can trace a figure to the landing files it came from, ``main.published``: one row, ``as_of``, the night they
were published (and the digest of the confidentiality rules they were made under), and ``main.stale``: the marts
kept from the last publication. A mart whose last dbt build did not
end ``built`` (``cost_pipeline.model_builds``), and every mart a confidentiality rule spans with it, is copied from
the file being replaced as it was (``kept_marts``). Every published mart table ends with an ``as_of`` column, so
each row says which night it is as of; apart from it the tables do not depend on when they were published, so
publishing the same warehouse twice gives identical marts (``cost_pipeline.fingerprint`` leaves ``as_of`` out). The
files use DuckDB's v1.1.0 storage format (``STORAGE_VERSION``), so DuckDB 1.1 and later clients (BI drivers) open
them; each column keeps its dbt description as its column comment.

Beside each file, a folder of Parquet files, one per mart (``<warehouse stem>.<audience>/<mart>.parquet``), with the
same columns as that audience's file (``as_of`` included); their key-value metadata holds ``as_of`` and each
column's description (``description.<column>``).

Readers never open the warehouse, so they never block the nightly writer (DuckDB: one writer per file, and a reader
in another process blocks it). Each file is written under a temporary name in the same folder, flushed to disk and
then renamed over the old one (``os.replace``). A reader that already has the old file open keeps reading that
snapshot; the next connection opens the new one. A file that an administrator restricted (``chmod``/``chgrp``) keeps
its mode and group across nightly swaps. A publish killed mid-write leaves its temporary file behind; the next
publish deletes it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import hashlib
import json
import os
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from cost_pipeline import duckdb_session
from cost_pipeline.contract import Complement, OverVersions, available_versions, load_contract
from cost_pipeline.duckdb_memory import limit_memory
from cost_pipeline.fingerprint import PUBLISHED_AT
from cost_pipeline.ingest.lib.warehouse import insert_rows, quote
from cost_pipeline.model_builds import unbuilt

FINANCE = "finance"
ENGINEERING = "engineering"
AUDIENCES = (FINANCE, ENGINEERING)
MARTS = "marts"
INPUTS = "inputs"  # main.inputs in each published file
PUBLISHED = "published"  # main.published: as_of, the night the file was published
RULES_DIGEST = "confidentiality_sha256"  # main.published: the digest of the confidentiality rules it was made under
STALE = "stale"  # main.stale: the marts this publication kept from the last one, why, and the night they are as of
AS_OF = PUBLISHED_AT  # the last column of every published mart table, and main.published's first
AS_OF_DESCRIPTION = "The night these figures were published (UTC): the same on every row of this publication."
# DuckDB 1.1 and later open files of this storage version; the default of duckdb 2.x is unreadable for 1.x clients.
STORAGE_VERSION = "v1.1.0"
_INPUT_COLUMNS = ("source", "source_file", "file_sha256", "rows_in", "rows_staged", "rows_quarantined", "duplicate_of")
# The in-memory connection already has databases of these names.
_RESERVED_ALIASES = {"memory", "system", "temp", "main"}
_BLANKED_VERSIONS = "temp.main.blanked_versions"  # history versions engineering sees blanked, computed per publish


class ConfidentialListOutdated(RuntimeError):
    """The contract names a confidential column the warehouse does not have: nothing is published."""


@dataclass(frozen=True)
class Publication:
    """What one publish wrote: names and counts only, safe for logs and Dagster metadata."""

    files: dict[str, Path]
    tables: dict[str, int]  # audience -> marts tables in its file
    omitted: tuple[str, ...]  # "table.column" left out of the engineering file
    input_files: int
    parquet: dict[str, Path]  # audience -> folder of one Parquet file per mart
    as_of: datetime
    # mart -> (why it was not rebuilt, the night of the copy kept from the last publication; None: there was none)
    stale: dict[str, tuple[str, datetime | None]] = field(default_factory=dict)


def published_path(warehouse: Path, audience: str) -> Path:
    """``<folder>/<warehouse stem>.<audience>.duckdb``."""
    if audience not in AUDIENCES:
        raise ValueError(f"unknown audience {audience!r}; expected one of {AUDIENCES}")
    return warehouse.with_name(f"{warehouse.stem}.{audience}.duckdb")


def confidential_columns() -> dict[tuple[str, str], str]:
    """(marts table, column) -> reason, from every shipped contract version: once confidential, always."""
    columns: dict[tuple[str, str], str] = {}
    for version in available_versions():
        columns.update(load_contract(version).confidential_columns)
    return columns


def small_group_rules() -> dict[str, tuple[str, tuple[str, ...]]]:
    """marts table -> (SQL condition, columns blanked in the engineering file), from every shipped contract."""
    rules: dict[str, tuple[str, tuple[str, ...]]] = {}
    for version in available_versions():
        for table, (condition, columns) in load_contract(version).small_groups[1].items():
            if table in rules:
                previous, blanked = rules[table]
                condition, columns = f"({previous}) or ({condition})", tuple(dict.fromkeys(blanked + columns))
            rules[table] = (condition, columns)
    return rules


def min_people() -> int:
    """The smallest group whose figures engineering sees: the largest any shipped contract asks for."""
    return max(load_contract(version).small_groups[0] for version in available_versions())


def complements() -> tuple[Complement, ...]:
    """Every shipped contract's totals over parts (secondary suppression within a night)."""
    return tuple(dict.fromkeys(c for version in available_versions() for c in load_contract(version).complements))


def over_versions() -> dict[str, OverVersions]:
    """History table -> its suppression across versions, from every shipped contract (the newest wins)."""
    rules: dict[str, OverVersions] = {}
    for version in available_versions():
        rules.update(load_contract(version).over_versions)
    return rules


def confidential_sources() -> tuple[str, ...]:
    """Sources whose file hashes engineering does not get, from every shipped contract."""
    return tuple(
        dict.fromkeys(s for version in available_versions() for s in load_contract(version).confidential_sources)
    )


Blank = tuple[str, tuple[str, ...]]  # (SQL condition on the table aliased t, columns published as null on it)


def _part_hidden(complement: Complement, confidential: dict[tuple[str, str], str], rules: dict[str, Blank]) -> str:
    """SQL condition, on a parts row, under which engineering does not see its part."""
    if (complement.parts_table, complement.parts_column) in confidential:
        return "true"
    condition, blanked = rules.get(complement.parts_table, ("false", ()))
    return condition if complement.parts_column in blanked else "false"


def _complement_blank(
    source: str, complement: Complement, confidential: dict[tuple[str, str], str], rules: dict[str, Blank], least: int
) -> Blank:
    """A total row is blanked when one of its parts (those ``complement.where`` names) is hidden and not zero, unless
    the people behind the parts' sum are at least ``least`` (then the sum is as publishable as the total itself)."""
    match = " and ".join(f"p.{quote(part)} = t.{quote(total)}" for part, total in complement.by)
    part = f"p.{quote(complement.parts_column)}"
    which = f" and ({complement.where})" if complement.where else ""
    condition = (
        f"exists (select 1 from {quote(source)}.{MARTS}.{quote(complement.parts_table)} as p where {match}{which} "
        f"and ({_part_hidden(complement, confidential, rules)}) and coalesce({part}, 0) <> 0)"
    )
    if complement.people:
        condition += f" and coalesce(t.{quote(complement.people)}, 0) < {least}"
    return condition, complement.columns


def _blanked_versions(
    con: duckdb.DuckDBPyConnection, source: str, table: str, rule: OverVersions, primary: str, least: int
) -> list[tuple[object, int, bool]]:
    """(key, version, is latest) of every version whose figure engineering sees blanked.

    Walked oldest first, per key: a version blanked by the primary rule is not published; any other is published
    only when its figure equals that of every version published before it, or its people count differs from theirs
    by at least ``least`` (two published figures then differ by the work of ``least`` people or more). A version's
    fate depends only on the versions before it, so history already published is never unblanked or reblanked."""
    rows = con.execute(
        f"select {quote(rule.key)}, {quote(rule.version)}, {quote(rule.people)}, {quote(rule.figure)}, "
        f"coalesce(({primary}), false) from {quote(source)}.{MARTS}.{quote(table)} order by 1, 2"
    ).fetchall()
    blanked, published, latest = [], {}, {}
    for key, version, people, figure, primary_blanked in rows:
        latest[key] = version
        shown = published.setdefault(key, [])
        if primary_blanked or not all(
            figure == seen or abs((people or 0) - (seen_people or 0)) >= least for seen_people, seen in shown
        ):
            blanked.append((key, version))
        else:
            shown.append((people, figure))
    return [(key, version, version == latest[key]) for key, version in blanked]


def engineering_blanks(con: duckdb.DuckDBPyConnection, source: str) -> dict[str, list[Blank]]:
    """marts table -> what engineering sees blanked on it: primary small groups, totals over blanked parts and
    history versions (and the latest-row tables) that differ from a published version by too few people.

    Creates the in-memory table of blanked history versions the conditions refer to."""
    confidential = confidential_columns()
    rules = small_group_rules()
    least = min_people()
    blanks: dict[str, list[Blank]] = {table: [rule] for table, rule in rules.items()}
    for complement in complements():
        blanks.setdefault(complement.total_table, []).append(
            _complement_blank(source, complement, confidential, rules, least)
        )
    con.execute(
        f"create or replace temporary table {_BLANKED_VERSIONS} "
        "(history varchar, key varchar, version bigint, latest boolean)"
    )
    for table, rule in over_versions().items():
        primary, _ = rules.get(table, ("false", ()))
        versions = _blanked_versions(con, source, table, rule, primary, least)
        insert_rows(
            con,
            _BLANKED_VERSIONS,
            ("history", "key", "version", "latest"),
            [(table, str(key), version, latest) for key, version, latest in versions],
        )
        key = f"b.history = '{table}' and b.key = cast(t.{quote(rule.key)} as varchar)"
        blanks.setdefault(table, []).append(
            (
                f"exists (select 1 from {_BLANKED_VERSIONS} as b where {key} and b.version = t.{quote(rule.version)})",
                rule.columns,
            )
        )
        for latest_table in rule.latest_in:
            columns = tuple(dict.fromkeys(c for _, cols in blanks.get(latest_table, []) for c in cols))
            blanks.setdefault(latest_table, []).append(
                (f"exists (select 1 from {_BLANKED_VERSIONS} as b where {key} and b.latest)", columns)
            )
    return blanks


def _changes_expression(table: str, blanks: dict[str, list[Blank]]) -> dict[str, str]:
    """column -> expression: a history's list of changed columns without the columns blanked in the version or the
    one before it (that a blanked figure changed is itself a difference over it)."""
    rule = over_versions().get(table)
    if rule is None or rule.changes is None:
        return {}
    hidden = ", ".join(f"'{c}'" for c in dict.fromkeys(c for _, cols in blanks.get(table, []) for c in cols))
    key = f"b.history = '{table}' and b.key = cast(t.{quote(rule.key)} as varchar)"
    name, version = quote(rule.changes), f"t.{quote(rule.version)}"
    return {
        rule.changes: (
            f"case when exists (select 1 from {_BLANKED_VERSIONS} as b where {key} and b.version in ({version}, "
            f"{version} - 1)) then array_to_string([c for c in string_split(t.{name}, ', ') if c not in ({hidden})], "
            f"', ') else t.{name} end"
        )
    }


def _engineering_select(
    table: str, columns: list[str], confidential: dict[tuple[str, str], str], blanks: dict[str, list[Blank]]
) -> list[str]:
    """Select expressions of one engineering table (aliased t): confidential columns left out, blanks applied."""
    rules = blanks.get(table.lower(), [])
    overrides = _changes_expression(table.lower(), blanks)
    expressions = []
    for column in columns:
        if (table.lower(), column.lower()) in confidential:
            continue
        name = quote(column)
        value = overrides.get(column.lower(), f"t.{name}")
        conditions = [f"({condition})" for condition, blanked in rules if column.lower() in blanked]
        if conditions:
            value = f"case when {' or '.join(conditions)} then null else {value} end"
        expressions.append(f"{value} as {name}")
    return expressions


def parquet_folder(warehouse: Path, audience: str) -> Path:
    """``<folder>/<warehouse stem>.<audience>/``: one Parquet file per mart."""
    return published_path(warehouse, audience).with_suffix("")


def publish_marts(warehouse: Path, as_of: datetime | None = None) -> dict[str, Path]:
    """Publish the warehouse's marts into the finance and engineering files; returns audience -> file."""
    return publish(warehouse, as_of).files


def publish(warehouse: Path, as_of: datetime | None = None, memory_limit: str | None = None) -> Publication:
    """``publish_marts`` with what was written: tables per file and the columns engineering does not get.
    ``as_of`` (default: now, to the second, UTC) is the night the files say they are as of. DuckDB runs under
    ``memory_limit`` (``cost_pipeline.duckdb_memory``), spilling beside the warehouse."""
    warehouse = Path(warehouse).resolve()
    if not warehouse.is_file():
        raise FileNotFoundError(f"no warehouse at {warehouse}")
    as_of = as_of if as_of is not None else datetime.now(UTC).replace(microsecond=0)
    targets = {audience: published_path(warehouse, audience) for audience in AUDIENCES}
    for path in targets.values():
        _remove_abandoned_temporaries(path)
    temporaries = {audience: _temporary_path(path) for audience, path in targets.items()}
    folders = {audience: parquet_folder(warehouse, audience) for audience in AUDIENCES}
    parquets: dict[str, dict[Path, Path]] = {audience: {} for audience in AUDIENCES}  # target -> temporary
    con = duckdb_session.connect()  # in memory: the warehouse is attached read-only, nothing else is opened
    try:
        limit_memory(con, warehouse, memory_limit)
        source = _source_alias(warehouse)
        con.execute(f"attach ? as {quote(source)} (read_only)", [str(warehouse)])
        columns = _marts_columns(con, source)
        if not columns:
            raise RuntimeError(f"the warehouse {warehouse} has no {MARTS} tables: nothing to publish")
        clashing = sorted(t for t, cols in columns.items() if AS_OF in (c.lower() for c in cols))
        if clashing:
            raise RuntimeError(
                f"the {MARTS} table(s) {', '.join(clashing)} have a column named {AS_OF}, which publishing adds to "
                "every table (the night it was published): rename it in the dbt model"
            )
        confidential = confidential_columns()
        present = {(t.lower(), c.lower()) for t, cols in columns.items() for c in cols}
        listed = _listed_columns()
        missing = sorted(f"{t}.{c}" for t, c in listed if (t, c) not in present)
        if missing:
            raise ConfidentialListOutdated(
                f"the definitions contract lists confidential column(s) {', '.join(missing)}, which the warehouse's "
                f"{MARTS} schema does not have; update the contract's confidential and small_groups lists before "
                "publishing"
            )
        stale = kept_marts(unbuilt(con, MARTS, source), set(columns))
        blanks = engineering_blanks(con, source)
        omitted = tuple(
            f"{t}.{c}" for t, cols in columns.items() for c in cols if (t.lower(), c.lower()) in confidential
        )
        fresh = {t: cols for t, cols in columns.items() if t not in stale}
        plans = {
            FINANCE: {t: [quote(c) for c in cols] for t, cols in fresh.items()},
            ENGINEERING: {t: _engineering_select(t, cols, confidential, blanks) for t, cols in fresh.items()},
        }
        withheld = ", ".join(f"'{s}'" for s in confidential_sources()) or "null"
        ledgers = {
            FINANCE: [quote(c) for c in _INPUT_COLUMNS],
            ENGINEERING: [
                f"case when source in ({withheld}) then null else file_sha256 end as file_sha256"
                if c == "file_sha256"
                else quote(c)
                for c in _INPUT_COLUMNS
            ],
        }
        inputs = 0
        kept: dict[str, dict[str, datetime | None]] = {}
        for audience, plan in plans.items():
            inputs, kept[audience] = _write(
                con,
                source,
                temporaries[audience],
                plan,
                ledgers[audience],
                targets[audience],
                as_of,
                folders[audience],
                parquets[audience],
                stale,
            )
        con.execute(f"detach {quote(source)}")
    except BaseException:
        con.close()
        for temporary in [*temporaries.values(), *(t for files in parquets.values() for t in files.values())]:
            _remove(temporary)
        raise
    con.close()
    for audience in AUDIENCES:  # every file is complete on disk before any is swapped in
        os.replace(temporaries[audience], targets[audience])
        _swap_parquet(folders[audience], parquets[audience])
    _fsync(warehouse.parent)
    return Publication(
        files=targets,
        tables={a: len(p) + sum(1 for night in kept[a].values() if night is not None) for a, p in plans.items()},
        omitted=omitted,
        stale={table: (reason, kept[FINANCE][table]) for table, reason in stale.items()},
        input_files=inputs,
        parquet=folders,
        as_of=as_of,
    )


def _listed_columns() -> set[tuple[str, str]]:
    """(table, column) of every marts column the contract's confidentiality sections name."""
    listed = set(confidential_columns())
    listed |= {(t, c) for t, (_, blanked) in small_group_rules().items() for c in blanked}
    for complement in complements():
        listed.add((complement.parts_table, complement.parts_column))
        listed |= {(complement.parts_table, part) for part, _ in complement.by}
        listed |= {(complement.total_table, c) for _, c in complement.by}
        listed |= {(complement.total_table, c) for c in complement.columns + (complement.people or "",) if c}
    for table, rule in over_versions().items():
        named = (rule.key, rule.version, rule.figure, rule.people, *rule.columns, rule.changes)
        listed |= {(table, c) for c in named if c}
        listed |= {(latest, rule.key) for latest in rule.latest_in}
    return listed


def _source_alias(warehouse: Path) -> str:
    # Attached under its own name (dbt's database name is the file stem), so a view in marts still resolves.
    return warehouse.stem if warehouse.stem.lower() not in _RESERVED_ALIASES else "warehouse_source"


def _temporary_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}-{uuid.uuid4().hex}.tmp")


def _remove_abandoned_temporaries(target: Path) -> list[Path]:
    """Delete the temporary files of publishes whose process is gone (killed mid-write): they may hold finance
    figures under a hidden name. A temporary of a process still running is left alone. Returns what was removed."""
    removed = []
    for temporary in target.parent.glob(f".{glob.escape(target.name)}.*-*.tmp"):
        pid = temporary.name[len(target.name) + 2 :].split("-", 1)[0]
        if not pid.isdigit() or _process_is_alive(int(pid)):
            continue
        _remove(temporary)
        removed.append(temporary)
    return removed


def _process_is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _marts_columns(con: duckdb.DuckDBPyConnection, source: str) -> dict[str, list[str]]:
    """table -> columns in order, for every table and view of the warehouse's marts schema."""
    rows = con.execute(
        "select table_name, column_name from duckdb_columns() where database_name = ? and schema_name = ? "
        "order by table_name, column_index",
        [source, MARTS],
    ).fetchall()
    columns: dict[str, list[str]] = {}
    for table, column in rows:
        columns.setdefault(table, []).append(column)
    return columns


@contextlib.contextmanager
def _transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """The statements of the block in one transaction, rolled back if it or the commit raises."""
    con.execute("begin transaction")
    try:
        yield
        con.execute("commit")
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # the error to raise is the block's (or the commit's), not this one
            con.execute("rollback")
        raise


def _write(
    con: duckdb.DuckDBPyConnection,
    source: str,
    temporary: Path,
    plan: dict[str, list[str]],
    ledger: list[str],
    target: Path,
    as_of: datetime,
    folder: Path,
    parquet: dict[Path, Path],
    stale: dict[str, str],
) -> tuple[int, dict[str, datetime | None]]:
    """Write one published file under ``temporary`` and flush it to disk, and its Parquet files under temporary
    names (recorded in ``parquet``: target -> temporary); returns the number of input files and, for each mart of
    ``stale`` (mart -> why it was not rebuilt), the night of the copy kept from ``target`` (None: it had none)."""
    alias = "published" if source != "published" else "published_file"
    con.execute(f"attach ? as {alias} (storage_version '{STORAGE_VERSION}')", [str(temporary)])
    _copy_permissions(target, temporary)
    try:
        # The file's statements in two transactions: a commit each (hundreds of comments) would cost a second.
        with _transaction(con):
            con.execute(f"create schema {alias}.{MARTS}")
            stamp = as_of_column(as_of)
            for table, expressions in plan.items():
                con.execute(
                    f"create table {alias}.{MARTS}.{quote(table)} as select {', '.join(expressions)}, {stamp} "
                    f"from {quote(source)}.{MARTS}.{quote(table)} as t order by all"
                )
        kept = _keep_stale(con, alias, target, stale)  # attaches the last publication: not inside a transaction
        with _transaction(con):
            con.execute(
                f"create table {alias}.main.{INPUTS} as select {', '.join(ledger)} "
                f"from {quote(source)}.raw.ingested_files order by source, source_file"
            )
            [(inputs,)] = con.execute(f"select count(*) from {alias}.main.{INPUTS}").fetchall()
            con.execute(
                f"create table {alias}.main.{PUBLISHED} as select cast(? as timestamptz) as {AS_OF}, "
                f"cast(? as varchar) as {RULES_DIGEST}",
                [as_of, confidentiality_digest()],
            )
            con.execute(
                f"create table {alias}.main.{STALE} "
                f"(mart varchar not null, reason varchar not null, {AS_OF} timestamptz)"
            )
            for table, night in sorted(kept.items()):
                con.execute(f"insert into {alias}.main.{STALE} values (?, ?, ?)", [table, stale[table], night])
            _copy_comments(con, source, alias, set(plan))
            for table in plan:
                con.execute(
                    f"comment on column {alias}.{MARTS}.{quote(table)}.{AS_OF} is {_literal(AS_OF_DESCRIPTION)}"
                )
        con.execute(f"checkpoint {alias}")
        nights = {table: as_of for table in plan} | {t: night for t, night in kept.items() if night is not None}
        _write_parquet(con, alias, nights, folder, parquet)
    finally:
        con.execute(f"detach {alias}")
    _fsync(temporary)
    return int(inputs), kept


def kept_marts(outcomes: dict[str, str], marts: set[str]) -> dict[str, str]:
    """mart -> why it is not published from the warehouse: its last build did not end ``built`` (``outcomes``, from
    ``model_builds.unbuilt``), or a confidentiality rule spans it and such a mart (a total and its parts, a history
    and its latest tables), whose blanking holds only when they are published from one night."""
    stale = {table: f"its last build ended: {status}" for table, status in outcomes.items() if table in marts}
    spans = [{c.parts_table, c.total_table} for c in complements()]
    spans += [{table, *rule.latest_in} for table, rule in over_versions().items()]
    changed = True
    while changed:
        changed = False
        for span in spans:
            cause = next((t for t in sorted(span) if t in stale), None)
            for table in sorted(span & marts):
                if cause is not None and table not in stale:
                    stale[table] = f"kept with {cause}, which a confidentiality rule spans with it"
                    changed = True
    return stale


def _keep_stale(
    con: duckdb.DuckDBPyConnection, alias: str, target: Path, stale: dict[str, str]
) -> dict[str, datetime | None]:
    """Copy each mart of ``stale`` from the last publication ``target`` into ``alias`` as it was, ``as_of`` and
    comments included; returns mart -> the night its copy is as of (None: ``target`` had no copy, none is written)."""
    if not stale:
        return {}
    if not target.is_file():
        return dict.fromkeys(stale)
    before = "last_publication"
    con.execute(f"attach ? as {before} (read_only)", [str(target)])
    try:
        tables = {
            (schema, table)
            for schema, table in con.execute(
                "select schema_name, table_name from duckdb_tables() where database_name = ?", [before]
            ).fetchall()
        }
        columns = {
            c
            for (c,) in con.execute(
                "select column_name from duckdb_columns() where database_name = ? and schema_name = 'main' "
                "and table_name = ?",
                [before, PUBLISHED],
            ).fetchall()
        }
        same_rules = (
            RULES_DIGEST in columns
            and con.execute(
                f"select bool_and({RULES_DIGEST} = ?) from {before}.main.{PUBLISHED}", [confidentiality_digest()]
            ).fetchall()[0][0]
        )
        kept: dict[str, datetime | None] = {}
        for table in stale:
            if not same_rules or (MARTS, table) not in tables:
                kept[table] = None
                continue
            con.execute(f"create table {alias}.{MARTS}.{quote(table)} as select * from {before}.{MARTS}.{quote(table)}")
            kept[table] = _night_of_copy(con, before, table, ("main", STALE) in tables)
        _copy_comments(con, before, alias, {t for t in kept if kept[t] is not None})
    finally:
        con.execute(f"detach {before}")
    return kept


def _night_of_copy(con: duckdb.DuckDBPyConnection, before: str, table: str, has_stale: bool) -> datetime:
    """The night the last publication's copy of ``table`` is as of: its rows' ``as_of``; for a table without rows,
    the night its ``main.stale`` row names, else that publication's."""
    kept_before = f"(select {AS_OF} from {before}.main.{STALE} where mart = ?)" if has_stale else "null"
    [(night,)] = con.execute(
        f"select coalesce((select max({AS_OF}) from {before}.{MARTS}.{quote(table)}), {kept_before}, "
        f"(select max({AS_OF}) from {before}.main.{PUBLISHED}))",
        [table] if has_stale else [],
    ).fetchall()
    return night


def confidentiality_digest() -> str:
    """sha256 of the contract's confidentiality rules as publishing applies them: a mart kept from a publication
    made under other rules could show what the rules now blank, so it is kept only while this is the same."""
    rules = {
        "confidential": sorted(f"{t}.{c}" for t, c in confidential_columns()),
        "small_groups": small_group_rules(),
        "min_people": min_people(),
        "complements": [dataclasses.asdict(c) for c in complements()],
        "over_versions": {t: dataclasses.asdict(r) for t, r in over_versions().items()},
        "sources": sorted(confidential_sources()),
    }
    return hashlib.sha256(json.dumps(rules, sort_keys=True, default=list).encode()).hexdigest()


def as_of_column(as_of: datetime) -> str:
    """The select-list item of a published row's last column: ``as_of``, the night it is as of."""
    return f"cast({_literal(as_of.isoformat())} as timestamptz) as {AS_OF}"


def _literal(text: str) -> str:
    """A SQL string literal (COMMENT ON and COPY options take no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def _copy_comments(con: duckdb.DuckDBPyConnection, source: str, alias: str, tables: set[str]) -> None:
    """The table and column comments of ``tables`` in ``source`` (the warehouse: dbt's descriptions, persist_docs;
    or the last publication) onto the published marts."""
    published = {
        (t, c)
        for t, c in con.execute(
            "select table_name, column_name from duckdb_columns() where database_name = ? and schema_name = ?",
            [alias, MARTS],
        ).fetchall()
    }
    for table, comment in con.execute(
        "select table_name, comment from duckdb_tables() where database_name = ? and schema_name = ? "
        "and coalesce(comment, '') <> ''",
        [source, MARTS],
    ).fetchall():
        if table in tables and any(t == table for t, _ in published):
            con.execute(f"comment on table {alias}.{MARTS}.{quote(table)} is {_literal(comment)}")
    for table, column, comment in con.execute(
        "select table_name, column_name, comment from duckdb_columns() where database_name = ? and schema_name = ? "
        "and coalesce(comment, '') <> ''",
        [source, MARTS],
    ).fetchall():
        if table in tables and (table, column) in published:  # engineering lacks the confidential columns
            con.execute(f"comment on column {alias}.{MARTS}.{quote(table)}.{quote(column)} is {_literal(comment)}")


def _write_parquet(
    con: duckdb.DuckDBPyConnection,
    alias: str,
    nights: dict[str, datetime],
    folder: Path,
    written: dict[Path, Path],
) -> None:
    """One Parquet file per published mart (``nights``: mart -> the night it is as of), under a temporary name in
    ``folder``: the table's columns (``as_of`` last); key-value metadata ``as_of`` and ``description.<column>`` (the
    column's comment)."""
    folder.mkdir(exist_ok=True)
    for table, as_of in nights.items():
        target = folder / f"{table}.parquet"
        _remove_abandoned_temporaries(target)
        temporary = _temporary_path(target)
        written[target] = temporary
        copy_to_parquet(
            con,
            f"select * from {alias}.{MARTS}.{quote(table)}",
            temporary,
            {AS_OF: as_of.isoformat(), **column_descriptions(con, alias, table)},
        )
        _copy_permissions(target, temporary)
        _fsync(temporary)


def column_descriptions(con: duckdb.DuckDBPyConnection, database: str, table: str) -> dict[str, str]:
    """``description.<column>`` -> the column's comment, for each described column of ``database``.marts.``table``."""
    return {
        f"description.{column}": comment
        for column, comment in con.execute(
            "select column_name, comment from duckdb_columns() where database_name = ? and schema_name = ? "
            "and table_name = ? and coalesce(comment, '') <> '' order by column_index",
            [database, MARTS, table],
        ).fetchall()
    }


def copy_to_parquet(con: duckdb.DuckDBPyConnection, select: str, path: Path, metadata: dict[str, str]) -> int:
    """The rows of ``select`` into the Parquet file ``path``, ``metadata`` its key-value metadata (COPY takes no
    parameters: ``select`` holds only quoted names and literals); returns how many rows."""
    pairs = ", ".join(f"{_literal(key)}: {_literal(value)}" for key, value in metadata.items())
    [(rows,)] = con.execute(
        f"copy ({select}) to {_literal(str(path))} (format parquet, kv_metadata {{{pairs}}})"
    ).fetchall()
    return int(rows)


def _swap_parquet(folder: Path, written: dict[Path, Path]) -> None:
    """Rename each new Parquet file over the old one; a mart that is gone loses its file."""
    for target, temporary in written.items():
        os.replace(temporary, target)
    for stale in folder.glob("*.parquet"):
        if stale not in written:
            _remove(stale)
    _fsync(folder)


def _copy_permissions(target: Path, temporary: Path) -> None:
    """Give the new file the old one's mode and group, so a restricted finance file stays restricted."""
    try:
        old = target.stat()
    except FileNotFoundError:
        return
    os.chmod(temporary, stat.S_IMODE(old.st_mode))
    with contextlib.suppress(PermissionError):
        os.chown(temporary, -1, old.st_gid)


def _fsync(path: Path) -> None:
    """Flush a file, or a folder's entries (after a rename), to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _remove(temporary: Path) -> None:
    for path in (temporary, temporary.with_name(temporary.name + ".wal")):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
