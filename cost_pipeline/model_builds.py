"""How each dbt model's last build ended: ``ops.model_builds``, one row per model, kept in the warehouse.

The dbt step marks every model it selected ``not finished`` before dbt starts, and sets each one's outcome from dbt's
``run_results.json`` when the build ends (``record_results``), successful or not:

- ``built``: dbt built it and none of its error-severity tests failed;
- ``failed a test``: built, but an error-severity test that reads it failed (or could not run): its rows are not
  trusted;
- ``error``: dbt could not build it;
- ``skipped``: dbt did not build it, because upstream of it a model errored or an error-severity test failed;
- ``not finished``: the build wrote no result for it (killed, or dbt could not start).

A model's table then still holds what its last good build wrote. Publishing reads the outcomes of the ``marts``
models (``unbuilt``): a mart that is not ``built`` is not published from the warehouse; the published files keep the
copy they had (``cost_pipeline.publish``). A model never recorded (a warehouse from before this table) counts as
built.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import duckdb

from cost_pipeline.ingest.lib.warehouse import insert_rows, quote

TABLE = "ops.model_builds"
BUILT = "built"
FAILED_TEST = "failed a test"
ERRORED = "error"
SKIPPED = "skipped"
NOT_FINISHED = "not finished"

_DDL = f"""
create table if not exists {TABLE} (
    unique_id varchar primary key,
    model_schema varchar not null,
    model_name varchar not null,
    status varchar not null,
    run_id varchar not null,
    recorded_at timestamptz not null
)
"""
_MODELS = ("model", "snapshot")


def outcomes(run_results: Mapping[str, Any], manifest: Mapping[str, Any]) -> dict[str, str]:
    """unique_id -> outcome of every model and snapshot in one dbt invocation's results."""
    nodes = manifest["nodes"]
    found: dict[str, str] = {}
    results = run_results.get("results", [])
    for result in results:
        node = nodes.get(result["unique_id"])
        if node is not None and node["resource_type"] in _MODELS:
            status = result["status"]
            found[result["unique_id"]] = BUILT if status == "success" else ERRORED if status == "error" else SKIPPED
    for result in results:
        node = nodes.get(result["unique_id"])
        if node is None or node["resource_type"] != "test" or result["status"] not in ("fail", "error"):
            continue
        # Every model the test reads: a test that compares two models (a relationship, sums that must match) does
        # not say which one is wrong.
        tested = {node.get("attached_node"), *node["depends_on"]["nodes"]}
        for unique_id in tested:
            if found.get(unique_id) == BUILT:
                found[unique_id] = FAILED_TEST
    return found


def _write(con: duckdb.DuckDBPyConnection, rows: list[tuple[str, str, str, str]], run_id: str) -> None:
    con.execute("create schema if not exists ops")
    con.execute(_DDL)
    if not rows:
        return
    at = datetime.now(UTC)
    columns = ("unique_id", "model_schema", "model_name", "status", "run_id", "recorded_at")
    insert_rows(con, TABLE, columns, [(*row, run_id, at) for row in rows], or_replace=True)


def _named(manifest: Mapping[str, Any], unique_id: str) -> tuple[str, str]:
    node = manifest["nodes"][unique_id]
    return node["config"]["schema"], node["name"]


def record_start(con: duckdb.DuckDBPyConnection, manifest: Mapping[str, Any], unique_ids: Iterable[str], run_id: str):
    """Mark the models of ``unique_ids`` ``not finished``: the build about to run selected them."""
    _write(con, [(u, *_named(manifest, u), NOT_FINISHED) for u in sorted(unique_ids)], run_id)


def record_results(
    con: duckdb.DuckDBPyConnection, run_results: Mapping[str, Any], manifest: Mapping[str, Any], run_id: str
) -> None:
    """Each model's outcome in one dbt invocation (``outcomes``)."""
    found = outcomes(run_results, manifest)
    _write(con, [(u, *_named(manifest, u), status) for u, status in sorted(found.items())], run_id)


def unbuilt(con: duckdb.DuckDBPyConnection, schema: str, database: str | None = None) -> dict[str, str]:
    """model name -> outcome, for each model of ``schema`` whose last build did not end ``built`` (none when the
    warehouse has no ``ops.model_builds``). ``database``: the warehouse's name when it is attached under one."""
    where = f"{quote(database)}.{TABLE}" if database else TABLE
    if not _kept(con, database):
        return {}
    return dict(
        con.execute(
            f"select model_name, status from {where} where model_schema = ? and status <> ? order by model_name",
            [schema, BUILT],
        ).fetchall()
    )


def recorded_by(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    """Whether the dbt step of run ``run_id`` recorded the outcomes of its build (its models' start at least)."""
    return _kept(con) and con.execute(f"select count(*) > 0 from {TABLE} where run_id = ?", [run_id]).fetchall()[0][0]


def _kept(con: duckdb.DuckDBPyConnection, database: str | None = None) -> bool:
    """Whether the warehouse (``con``'s, or the one attached as ``database``) has ``ops.model_builds``."""
    schema, table = TABLE.split(".")
    [(found,)] = con.execute(
        "select count(*) from duckdb_tables() where schema_name = ? and table_name = ? "
        "and database_name = coalesce(?, current_database())",
        [schema, table, database],
    ).fetchall()
    return bool(found)
