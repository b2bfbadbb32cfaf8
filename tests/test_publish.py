"""Publishing the marts for BI readers (R20): a finance file and an engineering file beside the warehouse, each
swapped in atomically; the engineering file never holds a confidential column; a reader held open during a run
neither blocks it nor sees the swap; a canary rate appears nowhere outside the finance file."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml

from cost_pipeline import publish as publishing
from cost_pipeline.cli import run_pipeline
from cost_pipeline.contract import load_contract
from cost_pipeline.defs.publish import mart_keys, published_marts
from cost_pipeline.fingerprint import table_fingerprints
from cost_pipeline.ingest.lib.warehouse import quote
from cost_pipeline.publish import ENGINEERING, FINANCE, ConfidentialListOutdated, publish_marts, published_path
from tests.helpers import nightly_assets_downstream_of

CANARY_RATE = "987654.32"  # a person's hourly rate planted in tasks/outcomes.csv
CANARY_TASK_COST = "98765.43"  # what it makes of the demo's 6 hand-off minutes: 6 × 987654.32 / 60
# The demo's own canaries: one person's timesheet cost rate and what it makes of his 6 training hours, and the
# cloud contract discount of the B-10 job (ListCost 160.66 - EffectiveCost 96.00 after the restatement).
DEMO_RATE, DEMO_RATE_DERIVED, DEMO_LIST_COST, DEMO_DISCOUNT = "173.37", "1040.22", "160.66", "64.66"
CANARY_TEXTS = (
    CANARY_RATE,
    CANARY_TASK_COST,
    "98765.432",
    "9876543",  # the fourth: the same in cents
    DEMO_RATE,
    DEMO_RATE_DERIVED,
    DEMO_LIST_COST,
    DEMO_DISCOUNT,
)


def tables(path: Path, schema: str) -> dict[str, list[str]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            "select table_name, column_name from information_schema.columns where table_schema = ? "
            "order by table_name, ordinal_position",
            [schema],
        ).fetchall()
    finally:
        con.close()
    found: dict[str, list[str]] = {}
    for table, column in rows:
        found.setdefault(table, []).append(column)
    return found


def all_text(path: Path) -> str:
    """Every row of every table in every schema of a DuckDB file, as text."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        relations = con.execute(
            "select table_schema, table_name from information_schema.tables order by 1, 2"
        ).fetchall()
        parts = []
        for schema, table in relations:
            parts.append(f"{schema}.{table}")
            rows = con.execute(f"select cast(t as varchar) from {quote(schema)}.{quote(table)} as t").fetchall()
            parts.extend(row for (row,) in rows)
        return "\n".join(parts)
    finally:
        con.close()


def published_as_of(path: Path):
    con = duckdb.connect(str(path), read_only=True)
    try:
        ((as_of,),) = con.execute("select as_of from main.published").fetchall()
    finally:
        con.close()
    return as_of


def copy_warehouse(demo_run, folder: Path) -> Path:
    """The demo warehouse and its published files, copied so this test can re-run or re-publish freely."""
    folder.mkdir(parents=True, exist_ok=True)
    warehouse = folder / demo_run.warehouse.name
    shutil.copyfile(demo_run.warehouse, warehouse)
    for audience in (FINANCE, ENGINEERING):
        shutil.copyfile(published_path(demo_run.warehouse, audience), published_path(warehouse, audience))
    return warehouse


def test_the_nightly_run_publishes_a_finance_and_an_engineering_file(demo_run):
    assert demo_run.succeeded
    finance = published_path(demo_run.warehouse, FINANCE)
    engineering = published_path(demo_run.warehouse, ENGINEERING)
    assert finance == demo_run.warehouse.with_name("warehouse.finance.duckdb")
    assert engineering == demo_run.warehouse.with_name("warehouse.engineering.duckdb")

    marts = tables(demo_run.warehouse, "marts")
    assert len(marts) >= 13
    # every table, every column, and last the night it is as of: on every row, main.published's one value
    assert tables(finance, "marts") == {t: [*c, "as_of"] for t, c in marts.items()}
    assert table_fingerprints(finance) == table_fingerprints(demo_run.warehouse)  # as_of left out
    as_of = published_as_of(finance)
    for path in (finance, engineering):
        with duckdb.connect(str(path), read_only=True) as con:
            stamped = {t: con.execute(f"select distinct as_of from marts.{quote(t)}").fetchall() for t in marts}
            rows = {t: con.execute(f"select count(*) from marts.{quote(t)}").fetchone()[0] for t in marts}
        assert stamped == {t: [(as_of,)] if rows[t] else [] for t in marts}
    published = {t: [c for c in cols if c != "as_of"] for t, cols in tables(engineering, "marts").items()}
    assert set(published) == set(marts)  # every table ...
    assert "human_cost" in marts["fct_task_costs"]
    assert "human_cost" not in published["fct_task_costs"]  # ... minus the confidential columns
    assert "task_cost" not in published["fct_task_costs"]  # task_cost - request_cost = a person's cost
    assert "request_cost" in published["fct_task_costs"]
    assert [c for c in marts["fct_resource_book"] if c not in published["fct_resource_book"]] == [
        "list_cost",
        "contract_discount",
    ]  # a contract discount, and what reveals it
    assert [c for c in marts["fct_batch_cost_history"] if c not in published["fct_batch_cost_history"]] == [
        "inputs_hash",
        "content_hash",
    ]  # hashes over the blanked labour cost and over the timesheets
    assert [c for c in marts["fct_gl_journal"] if c not in published["fct_gl_journal"]] == [
        "debit",
        "credit",
        "net_amount",
    ]  # a cost centre's labour line is the cost of its people
    with_omissions = {"fct_task_costs", "fct_resource_book", "fct_batch_cost_history", "fct_gl_journal"}
    assert {t: c for t, c in published.items() if t not in with_omissions} == {
        t: c for t, c in marts.items() if t not in with_omissions
    }

    # The inputs ledger lets a reader trace a figure to its landing files; only main.published says when it was
    # published. Engineering does not get the hash of a file that holds rates or discounts (confidential_sources).
    ledger = demo_run.query("select source, source_file, file_sha256 from raw.ingested_files order by all")
    withheld = {"timesheets", "task_outcomes", "billing_focus"}
    assert withheld == set(load_contract("v1").confidential_sources) and withheld <= {s for s, _, _ in ledger}
    for path, expected in (
        (finance, ledger),
        (engineering, sorted((s, f, None if s in withheld else h) for s, f, h in ledger)),
    ):
        assert tables(path, "main") == {
            "inputs": list(publishing._INPUT_COLUMNS),
            "published": ["as_of", "confidentiality_sha256"],
            "stale": ["mart", "reason", "as_of"],  # the marts kept from the last publication: none, every one rebuilt
        }
        con = duckdb.connect(str(path), read_only=True)
        try:
            assert (
                con.execute("select source, source_file, file_sha256 from main.inputs order by all").fetchall()
                == expected
            )
            assert con.execute("select count(*) from main.stale").fetchall() == [(0,)]
        finally:
            con.close()
    assert not [p for p in demo_run.warehouse.parent.iterdir() if p.name.endswith((".tmp", ".tmp.wal"))]


def test_the_confidential_columns_are_listed_once_in_the_contract():
    listed = {
        ("fct_task_costs", "human_cost"),
        ("fct_task_costs", "task_cost"),
        ("fct_resource_book", "list_cost"),
        ("fct_resource_book", "contract_discount"),
        ("fct_batch_cost_history", "content_hash"),
        ("fct_batch_cost_history", "inputs_hash"),
        ("fct_gl_journal", "debit"),
        ("fct_gl_journal", "credit"),
        ("fct_gl_journal", "net_amount"),
    }
    assert load_contract("v1").confidential_columns.keys() == listed
    assert publishing.confidential_columns().keys() >= listed


def test_republishing_gives_identical_tables(demo_run, tmp_path):
    """Only as_of depends on when the files were published: republished as of the same night, nothing differs."""
    warehouse = copy_warehouse(demo_run, tmp_path)

    def fingerprints(path: Path) -> dict:  # as_of included: republished as of the same night, it is the same
        return {s: table_fingerprints(path, s, ignore=()) for s in ("marts", "main")}

    before = {a: fingerprints(published_path(warehouse, a)) for a in (FINANCE, ENGINEERING)}
    files = publish_marts(warehouse, as_of=published_as_of(published_path(warehouse, FINANCE)))
    assert files == {FINANCE: published_path(warehouse, FINANCE), ENGINEERING: published_path(warehouse, ENGINEERING)}
    after = {a: fingerprints(files[a]) for a in (FINANCE, ENGINEERING)}
    assert after == before
    assert before[FINANCE]["marts"] != before[ENGINEERING]["marts"]
    folders = [publishing.parquet_folder(warehouse, a).name for a in (FINANCE, ENGINEERING)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [warehouse.name, files[FINANCE].name, files[ENGINEERING].name, *folders]
    )  # no temporary file left behind
    for folder in folders:
        assert not [p for p in (tmp_path / folder).iterdir() if p.suffix != ".parquet"]


def test_a_publish_killed_mid_write_leaves_nothing_behind_after_the_next(demo_run, tmp_path):
    """kill -9 during publishing leaves a hidden temporary file (finance figures under another name); the next
    publish deletes it. A temporary file of a publish still running is not touched."""
    warehouse = copy_warehouse(demo_run, tmp_path)
    finance = published_path(warehouse, FINANCE)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    abandoned = finance.with_name(f".{finance.name}.{gone.stdout.strip()}-0123456789abcdef.tmp")
    shutil.copyfile(finance, abandoned)
    abandoned.with_name(abandoned.name + ".wal").write_bytes(b"")
    running = finance.with_name(f".{finance.name}.{os.getpid()}-fedcba9876543210.tmp")
    running.write_bytes(b"")
    publish_marts(warehouse)
    assert not abandoned.exists() and not abandoned.with_name(abandoned.name + ".wal").exists()
    assert running.exists()
    running.unlink()


def test_a_new_mart_is_published_and_a_listed_column_never_is(demo_run, tmp_path, monkeypatch):
    warehouse = copy_warehouse(demo_run, tmp_path)
    con = duckdb.connect(str(warehouse))
    con.execute("create table marts.fct_new_mart as select 'B-7' as batch_id, 12.5 as vendor_discount")
    con.close()
    listed = {**publishing.confidential_columns(), ("fct_new_mart", "vendor_discount"): "a contract discount"}
    monkeypatch.setattr(publishing, "confidential_columns", lambda: listed)
    files = publish_marts(warehouse)
    assert tables(files[FINANCE], "marts")["fct_new_mart"] == ["batch_id", "vendor_discount", "as_of"]
    assert tables(files[ENGINEERING], "marts")["fct_new_mart"] == ["batch_id", "as_of"]


def test_a_listed_column_the_warehouse_lacks_stops_publishing(demo_run, tmp_path, monkeypatch):
    """A renamed confidential column would otherwise reach engineering unnoticed: nothing is swapped."""
    warehouse = copy_warehouse(demo_run, tmp_path)
    before = {a: published_path(warehouse, a).stat().st_ino for a in (FINANCE, ENGINEERING)}
    listed = {**publishing.confidential_columns(), ("fct_task_costs", "people_cost"): "renamed?"}
    monkeypatch.setattr(publishing, "confidential_columns", lambda: listed)
    with pytest.raises(ConfidentialListOutdated, match="fct_task_costs.people_cost"):
        publish_marts(warehouse)
    assert {a: published_path(warehouse, a).stat().st_ino for a in (FINANCE, ENGINEERING)} == before
    assert len(list(tmp_path.iterdir())) == 3  # no temporary file left behind


def test_a_restricted_file_stays_restricted_across_swaps(demo_run, tmp_path):
    warehouse = copy_warehouse(demo_run, tmp_path)
    published_path(warehouse, FINANCE).chmod(0o640)
    files = publish_marts(warehouse)
    assert files[FINANCE].stat().st_mode & 0o777 == 0o640


def test_the_publish_asset_depends_on_every_mart():
    from cost_pipeline.definitions import defs

    graph = defs.resolve_asset_graph()
    marts = {key for key in graph.get_all_asset_keys() if key.path[0] == "marts"}
    assert len(marts) >= 13 and set(mart_keys) == marts
    assert graph.get(published_marts.key).parent_keys == marts
    assert published_marts.group_names_by_key[published_marts.key] == "publish"


def test_a_failed_run_leaves_the_published_files_as_they_were(demo_run, tmp_path, monkeypatch):
    """A failed blocking check stops dbt, and so the publish: readers keep the last good night. The night after the
    demo's, on a copy of it: the task outcomes' raw asset, whose check fails, and every asset of the nightly job
    downstream of it (its models, their marts and publishing); the rest reads nothing of it."""
    from cost_pipeline.ingest.lib.warehouse import IngestReport

    warehouse = copy_warehouse(demo_run, tmp_path / "night")
    before = {a: published_path(warehouse, a).stat().st_ino for a in (FINANCE, ENGINEERING)}
    real = IngestReport.conserved
    monkeypatch.setattr(
        IngestReport,
        "conserved",
        property(lambda report: False if report.source == "task_outcomes" else real.fget(report)),
    )
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.setenv("COST_LANDING_DIR", str(demo_run.landing))
    monkeypatch.setenv("COST_WAREHOUSE", str(warehouse))
    keys = nightly_assets_downstream_of(
        [("raw", "task_outcomes")], covering=("marts/fct_task_costs", "published/marts")
    )

    assert not run_pipeline(demo_run.landing, warehouse, asset_keys=list(keys.values()))
    assert {a: published_path(warehouse, a).stat().st_ino for a in (FINANCE, ENGINEERING)} == before
    assert not [p for p in warehouse.parent.iterdir() if ".tmp" in p.name]


READER = textwrap.dedent("""
    import json, os, sys
    import duckdb

    path = sys.argv[1]
    con = duckdb.connect(path, read_only=True)

    def look():
        return {"marker": con.execute("select note from main.snapshot_marker").fetchone()[0],
                "batches": con.execute("select count(*) from marts.fct_batch_compute").fetchone()[0]}

    print(json.dumps({"inode": os.stat(path).st_ino, **look()}), flush=True)
    sys.stdin.readline()              # hold the connection open until the run is over
    print(json.dumps(look()), flush=True)
    con.close()
""")


def test_a_reader_held_open_during_a_run_neither_blocks_it_nor_sees_the_swap(demo_run, tmp_path, monkeypatch):
    """A run of the nightly job's publish asset alone, on a copy of the demo night (the one step that writes the
    published files; the others never open them), while a reader holds the finance file open."""
    warehouse = copy_warehouse(demo_run, tmp_path / "night")
    finance = published_path(warehouse, FINANCE)
    con = duckdb.connect(str(finance))
    con.execute("create table main.snapshot_marker as select 'yesterday' as note")  # tells the snapshots apart
    con.close()
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.setenv("COST_LANDING_DIR", str(demo_run.landing))  # restored after the test
    monkeypatch.setenv("COST_WAREHOUSE", str(warehouse))

    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(finance)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        opened = json.loads(reader.stdout.readline() or reader.stderr.read())
        assert opened["marker"] == "yesterday" and opened["batches"] >= 3

        assert run_pipeline(demo_run.landing, warehouse, asset_keys=[published_marts.key.path])

        assert reader.poll() is None  # the reader was open all along
        assert os.stat(finance).st_ino != opened["inode"]  # a new file was swapped in ...
        assert "snapshot_marker" not in tables(finance, "main")
        assert table_fingerprints(finance) == table_fingerprints(warehouse)
        reader.stdin.write("done\n")
        reader.stdin.flush()
        assert json.loads(reader.stdout.readline()) == {"marker": "yesterday", "batches": opened["batches"]}
        assert reader.wait(timeout=30) == 0  # ... while the reader kept its snapshot
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()


def plant_canary(landing: Path) -> str:
    """Give one handed-off task a distinctive hourly rate; returns the task id."""
    path = landing / "tasks" / "outcomes.csv"
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    (task,) = [row for row in rows if row["judged_by"] == "human"][:1]
    assert task["human_minutes"] == "6"
    task["human_cost_per_hour"] = CANARY_RATE
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return task["task_id"]


def leaks(text: str) -> list[str]:
    """The canaries written in ``text`` as numbers of their own: a timestamp or a hash that happens to contain the
    digits (an event log's 1796049876.5432 holds 9876543) is not a leak; the same number in cents still is."""
    return [canary for canary in CANARY_TEXTS if re.search(rf"(?<![\w.]){re.escape(canary)}(?!\w)", text)]


def test_a_canary_rate_appears_nowhere_outside_the_finance_file(demo_run, tmp_path, monkeypatch, capfd):
    landing = tmp_path / "landing"
    shutil.copytree(demo_run.landing, landing)
    task_id = plant_canary(landing)
    warehouse = tmp_path / "night" / "warehouse.duckdb"
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("COST_LANDING_DIR", str(landing))
    monkeypatch.setenv("COST_WAREHOUSE", str(warehouse))
    capfd.readouterr()

    assert run_pipeline(landing, warehouse)
    captured = capfd.readouterr()

    # It got through: the warehouse holds the rate, and finance reads the task's people cost.
    assert {CANARY_RATE, CANARY_TASK_COST} <= set(leaks(all_text(warehouse)))
    finance = duckdb.connect(str(published_path(warehouse, FINANCE)), read_only=True)
    (human_cost,) = finance.execute(
        "select cast(human_cost as varchar) from marts.fct_task_costs where task_id = ?", [task_id]
    ).fetchone()
    finance.close()
    assert human_cost == CANARY_TASK_COST
    finance = duckdb.connect(str(published_path(warehouse, FINANCE)), read_only=True)
    (list_cost, discount) = finance.execute(
        "select cast(list_cost as varchar), cast(contract_discount as varchar) from marts.fct_resource_book "
        "where job_id = 'b10-eval-cloud'"
    ).fetchone()
    finance.close()
    assert (list_cost, discount) == (DEMO_LIST_COST, DEMO_DISCOUNT)

    # Nowhere else: not in the engineering file ...
    engineering = published_path(warehouse, ENGINEERING)
    assert len(tables(engineering, "marts")) >= 13
    assert leaks(all_text(engineering)) == []
    # ... nor in engineering's Parquet files ...
    import pyarrow.parquet as pq

    parquet = sorted(publishing.parquet_folder(warehouse, ENGINEERING).iterdir())
    assert len(parquet) >= 13
    assert {p.name: leaks(str(pq.read_table(p).to_pylist())) for p in parquet} == {p.name: [] for p in parquet}
    # ... nor in the terminal output ...
    assert "RUN_SUCCESS" in captured.out + captured.err
    assert leaks(captured.out) == [] and leaks(captured.err) == []
    # ... nor in the Dagster event log (messages, materialisation and check metadata) ...
    instance = dg.DagsterInstance.get()
    try:
        (run,) = instance.get_runs()
        entries = instance.all_logs(run.run_id)
        assert any(
            e.dagster_event
            and e.dagster_event.event_type_value == "ASSET_MATERIALIZATION"
            and e.dagster_event.asset_key == published_marts.key
            for e in entries
        )
        assert leaks("\n".join(dg.serialize_value(entry) for entry in entries)) == []
    finally:
        instance.dispose()
    # ... nor anywhere in the instance's storage (run and event-log databases, compute logs) ...
    stored = [p for p in home.rglob("*") if p.is_file()]
    assert stored
    assert {p.name: leaks(p.read_bytes().decode("utf-8", "replace")) for p in stored} == {p.name: [] for p in stored}
    # ... nor in what dbt wrote for this run (its log, run results and compiled SQL).
    from cost_pipeline.dbt_setup import DBT_PROJECT_DIR

    dbt_files = [
        p for d in (DBT_PROJECT_DIR / "target").glob(f"*-{run.run_id[:7]}-*") for p in d.rglob("*") if p.is_file()
    ]
    assert dbt_files
    assert {p.name: leaks(p.read_bytes().decode("utf-8", "replace")) for p in dbt_files} == {
        p.name: [] for p in dbt_files
    }


# ------------------------------------------------------------------------------ files BI tools open (issue 11)
def mart_descriptions() -> dict[tuple[str, str], str]:
    """(mart, column) -> the column's description in the dbt yml, whitespace folded as dbt persists it; and each
    mart's as_of, which publishing adds, described by publishing."""
    descriptions = {}
    for path in (Path(__file__).parents[1] / "dbt_project" / "models" / "marts").rglob("_*__models.yml"):
        for model in yaml.safe_load(path.read_text(encoding="utf-8"))["models"]:
            descriptions[(model["name"], "as_of")] = publishing.AS_OF_DESCRIPTION
            for column in model.get("columns", []):
                descriptions[(model["name"], column["name"])] = " ".join(str(column["description"]).split())
    return descriptions


def comments(path: Path) -> dict[tuple[str, str], str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            "select table_name, column_name, comment from duckdb_columns() where schema_name = 'marts'"
        ).fetchall()
    finally:
        con.close()
    return {(t, c): " ".join((comment or "").split()) for t, c, comment in rows}


def test_column_descriptions_reach_the_published_files_as_column_comments(demo_run):
    described = mart_descriptions()
    finance = comments(published_path(demo_run.warehouse, FINANCE))
    engineering = comments(published_path(demo_run.warehouse, ENGINEERING))
    assert len(finance) > 300
    assert finance == {key: described[key] for key in finance}  # every published column, its yml description
    assert engineering == {key: described[key] for key in engineering}
    assert ("fct_task_costs", "human_cost") in finance and ("fct_task_costs", "human_cost") not in engineering


def test_each_mart_is_also_a_parquet_file_that_pyarrow_opens(demo_run):
    import pyarrow.parquet as pq

    described = mart_descriptions()
    for audience in (FINANCE, ENGINEERING):
        database = published_path(demo_run.warehouse, audience)
        folder = publishing.parquet_folder(demo_run.warehouse, audience)
        assert folder == demo_run.warehouse.with_name(f"warehouse.{audience}")
        marts = tables(database, "marts")
        assert sorted(p.name for p in folder.iterdir()) == sorted(f"{t}.parquet" for t in marts)
        as_of = published_as_of(database)
        for table, columns in marts.items():
            parquet = pq.read_table(folder / f"{table}.parquet")
            assert parquet.column_names == columns and columns[-1] == "as_of"
            (count,) = (
                duckdb.connect(str(database), read_only=True)
                .execute(f"select count(*) from marts.{quote(table)}")
                .fetchone()
            )
            assert parquet.num_rows == count
            assert set(parquet.column("as_of").to_pylist()) <= {as_of}
            metadata = {k.decode(): v.decode() for k, v in parquet.schema.metadata.items()}
            assert metadata["as_of"] == as_of.isoformat()
            for column in columns:
                assert " ".join(metadata[f"description.{column}"].split()) == described[(table, column)]
    engineering = pq.read_table(publishing.parquet_folder(demo_run.warehouse, ENGINEERING) / "fct_task_costs.parquet")
    assert "human_cost" not in engineering.column_names and "task_cost" not in engineering.column_names
    finance = pq.read_table(publishing.parquet_folder(demo_run.warehouse, FINANCE) / "fct_task_costs.parquet")
    assert "human_cost" in finance.column_names


def storage_version_number(path: Path) -> int:
    """The storage version number in a DuckDB file's header (the 8 bytes after the magic "DUCK" at byte 8)."""
    header = path.read_bytes()[:20]
    assert header[8:12] == b"DUCK"
    return int.from_bytes(header[12:20], "little")


def test_the_published_files_use_a_storage_format_duckdb_1_1_reads(demo_run, tmp_path):
    """DuckDB 1.1 reads storage version 64 (that of 0.10 to 1.1); duckdb 2.x writes 999 unless told otherwise,
    which a 1.x BI driver refuses ("database file with version number 999")."""
    for audience in (FINANCE, ENGINEERING):
        assert storage_version_number(published_path(demo_run.warehouse, audience)) == 64
    default = tmp_path / "default.duckdb"
    duckdb.connect(str(default)).close()
    assert storage_version_number(default) > 64  # the number is what the option changed


# The oldest client the published files are for (the storage header test above covers the format itself).
DUCKDB_1X = "duckdb==1.1.3"


def _duckdb_1x(target: Path) -> Path:
    """Install a DuckDB 1.1 client into ``target`` from the package index, as the focus-validator test installs
    its validator (the test environment itself keeps DuckDB 2)."""
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), DUCKDB_1X],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    return target


def test_a_duckdb_1x_client_opens_the_published_files(demo_run, tmp_path):
    client = _duckdb_1x(tmp_path / "duckdb1")
    script = textwrap.dedent("""
        import json, sys
        import duckdb
        found = {"version": duckdb.__version__}
        for path in sys.argv[1:]:
            con = duckdb.connect(path, read_only=True)
            found[path] = con.execute(
                "select count(*), count(comment) from duckdb_columns() where schema_name = 'marts'"
            ).fetchone() + con.execute(
                "select count(*), cast(sum(amount) as varchar) from marts.fct_cost_lines"
            ).fetchone()
            con.close()
        print(json.dumps(found))
    """)
    files = [str(published_path(demo_run.warehouse, a)) for a in (FINANCE, ENGINEERING)]
    done = subprocess.run(
        [sys.executable, "-c", script, *files],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(client)},
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["version"] == DUCKDB_1X.removeprefix("duckdb==")
    for path in files:
        columns, described, read_lines, read_amount = found[path]
        assert columns > 300 and described == columns
        # The 1.x client reads the figures themselves, to the cent, as this DuckDB reads them from the same file.
        with duckdb.connect(path, read_only=True) as con:
            lines, amount = con.execute("select count(*), sum(amount) from marts.fct_cost_lines").fetchone()
        assert (read_lines, Decimal(read_amount)) == (lines, amount) and lines > 0 and amount > 0
