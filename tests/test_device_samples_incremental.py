"""int_device_samples_tiered is built again only for the jobs whose inputs changed, int_gpu_share_days only for the
days (issue 15), and what they keep plus what they build is what a full build gives, whatever changed in raw: a late
file for one job, that file gone, a row held by a dbt test, a job's end, the contract's tier rule. Each change is made
to raw on a copy of the demo night's warehouse, the models up to the tiered table and fct_gpu_shares are run
incrementally, and the tables are compared with a full refresh (or, where raw is again what an earlier full build
read, with that build's tables)."""

from __future__ import annotations

import json
import re
import shutil
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest

from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, dbt_project
from tests.helpers import dbt_in_process as _dbt
from tests.helpers import dbt_target, query

if TYPE_CHECKING:
    from dbt.contracts.graph.manifest import Manifest

TIERED = "intermediate.int_device_samples_tiered"
# The incremental tables, and the mart that closes the share days' last instants.
BY_DAY = ("int_gpu_share_days", "int_unattributed_gpu_days")
COMPARED = (
    TIERED,
    *(f"intermediate.{model}" for model in BY_DAY),
    "marts.fct_gpu_shares",
    "marts.fct_unattributed_gpu_hours",
)
INPUTS = "intermediate.int_device_samples_inputs"
# What each run builds: the incremental tables and the marts that read them.
MODELS = ("int_device_samples_tiered", "fct_gpu_shares", "fct_unattributed_gpu_hours")
# What a full refresh builds again right after a run on the same raw tables: the models from the inputs table down to
# MODELS. The inputs table must be this run's (else the incremental models are built whole and drop their kept inputs,
# and the next night's run would build everything); the tables and views above it are the earlier run's, built from
# the same raw tables as this run would build them.
FROM_INPUTS = " ".join(f"int_device_samples_inputs+,+{model}" for model in MODELS)
BUILT = "int_device_samples_tiered_built"
WAREHOUSE = "warehouse.duckdb"  # every warehouse's file name here: the parsed manifest's database
# A late file: one GPU of job 1003 sampled again half an interval after each of its samples; and the file gone.
LATE_FILE = (
    "insert into raw.device_samples by name select * replace ("
    "  timestamp + interval 30 second as timestamp, 'telemetry/late.csv' as source_file,"
    "  row_number() over (order by timestamp) as source_line, 'late' as file_sha256)"
    " from raw.device_samples where job_id = '1003' and gpu = 0 and hostname = 'gpu-a'",
    "insert into raw.ingested_files by name select 'device_samples' as source, 'telemetry/late.csv' as source_file,"
    " 'late' as file_sha256, count(*) as rows_in, count(*) as rows_staged, 0 as rows_quarantined"
    " from raw.device_samples where source_file = 'telemetry/late.csv'",
)
LATE_FILE_GONE = (
    "delete from raw.device_samples where source_file = 'telemetry/late.csv'",
    "delete from raw.ingested_files where source_file = 'telemetry/late.csv'",
)


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    """The project parsed once (from the prepared partial parse), for a warehouse named ``WAREHOUSE``: each run then
    starts from it, not from a new dbt process that imports dbt and loads the parse again (3-5 s a run). What the
    parse keeps of the warehouse is its file's stem (the database's name), the same for every warehouse here."""
    folder = tmp_path_factory.mktemp("parse")
    target = dbt_target(folder, folder / WAREHOUSE)
    return _dbt(folder, "parse", "--target-path", str(target), "--log-path", str(folder / "logs")).result


def _run(
    manifest: Manifest,
    warehouse: Path,
    tmp_path: Path,
    *args: str,
    select: str = " ".join(f"+{model}" for model in MODELS),
) -> None:
    """``dbt run`` as the night runs dbt, on ``manifest``: its compiled SQL in ``tmp_path / "target"``, its log in
    ``tmp_path / "logs"``. No manifest or run results are written (nothing here reads them)."""
    assert warehouse.name == WAREHOUSE, "the parsed manifest names the database after the warehouse's file"
    ran = _dbt(
        warehouse.parent,
        "run",
        "--select",
        select,
        *args,
        "--target-path",
        str(tmp_path / "target"),
        "--log-path",
        str(tmp_path / "logs"),
        "--no-write-json",
        manifest=manifest,
    )
    if select == FROM_INPUTS:
        built = {result.node.name for result in ran.result.results if result.node.resource_type == "model"}
        assert built == {"int_device_samples_inputs", *BY_DAY, *MODELS}, built


def _rows(warehouse: Path) -> dict[str, list[tuple]]:
    return {table: query(warehouse, f"select * from {table} order by all") for table in COMPARED}


def _days_built(tmp_path: Path) -> list[tuple[date, date]] | None:
    """The day ranges the last run built the tables incremental by day again, as their SQL names them (the same for
    both, however many of its scans a model filters by them); None for every day."""
    built = []
    for model in BY_DAY:
        sql = next((tmp_path / "target" / "compiled").rglob(f"{model}.sql")).read_text()
        bounds = re.findall(r"sampled_at (?:>=|<) cast\('(\d{4}-\d{2}-\d{2})", sql)
        days = [date.fromisoformat(bound) for bound in bounds]
        nothing = re.search(r"(?<![\w.])1 = 0", sql)  # periods_where of no range
        built.append(sorted(set(zip(days[::2], days[1::2], strict=True))) if days else [] if nothing else None)
    assert built[0] == built[1], built
    return built[0]


def _rebuilt(warehouse: Path) -> set[str]:
    return {job for (job,) in query(warehouse, f"select item from {INPUTS} where kind = 'job' and rebuild")}


def _change(warehouse: Path, *statements: str) -> None:
    con = duckdb.connect(str(warehouse))
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()


def _incremental_equals_full(
    manifest: Manifest, warehouse: Path, tmp_path: Path, full: dict[str, list[tuple]] | None = None
) -> tuple[set[str], list[tuple[date, date]] | None]:
    """Run incrementally, then compare with a full refresh, or with ``full``: the tables a full build of the same raw
    tables gave earlier (then no full refresh runs, and the next change starts from what the incremental run kept, as
    the next night would); returns the jobs and the days the incremental run built again."""
    before = _rows(warehouse)
    _run(manifest, warehouse, tmp_path)
    rebuilt, days, incremental = _rebuilt(warehouse), _days_built(tmp_path), _rows(warehouse)
    assert incremental != before  # every change below changes some sample's figures
    if full is None:
        _run(manifest, warehouse, tmp_path, "--full-refresh", select=FROM_INPUTS)
        full = _rows(warehouse)
    assert full == incremental
    return rebuilt, days


def _late_file_days(warehouse: Path) -> list[tuple[date, date]]:
    """The days the late file's samples span, as the one range [first day, day after the last)."""
    ((first, last),) = query(
        warehouse,
        "select min(timestamp)::date, max(timestamp)::date from raw.device_samples where source_file like '%late.csv'",
    )
    return [(first, last + timedelta(days=1))]


def _job(warehouse: Path, job_id: str) -> str:
    ((key,),) = query(warehouse, f"select job_key from intermediate.int_jobs_attributed where job_id = '{job_id}'")
    return key


@pytest.fixture
def warehouse(demo_run, tmp_path: Path) -> Path:
    copy = tmp_path / "warehouse.duckdb"
    shutil.copy(demo_run.warehouse, copy)
    return copy


def _span_days(warehouse: Path, where: str, table: str = "raw.device_samples", at: str = "timestamp") -> list:
    """The days the rows ``where`` span, as the one range [first day, day after the last)."""
    ((first, last),) = query(warehouse, f"select min({at})::date, max({at})::date from {table} where {where}")
    return [(first, last + timedelta(days=1))]


def test_a_night_builds_again_only_the_jobs_and_days_whose_inputs_changed(
    manifest: Manifest, warehouse: Path, tmp_path: Path
):
    demo = _rows(warehouse)  # the demo night built every table whole: a full build of its raw tables
    _run(manifest, warehouse, tmp_path)  # the demo night's inputs are the ones kept: nothing to build again
    assert _rebuilt(warehouse) == set() and _days_built(tmp_path) == []
    assert _rows(warehouse) == demo
    jobs = {job for (job,) in query(warehouse, f"select item from {INPUTS} where kind = 'job'")}

    # A late file (LATE_FILE): only the job and the days its time spans are built again, its samples now standing
    # for half the time.
    _change(warehouse, *LATE_FILE)
    late_days = _span_days(warehouse, "source_file = 'telemetry/late.csv'")
    assert _incremental_equals_full(manifest, warehouse, tmp_path) == ({_job(warehouse, "1003")}, late_days)
    late = _rows(warehouse)  # the full refresh's: what a full build of raw with the late file gives

    # The file gone again (retracted): the same job and days are built again, from the samples left. The raw tables
    # are the demo night's again, and so must the tables be.
    _change(warehouse, *LATE_FILE_GONE)
    assert _incremental_equals_full(manifest, warehouse, tmp_path, demo) == ({_job(warehouse, "1003")}, late_days)

    # The tier table selected alone after the file came back: the inputs table is the last run's, so every job is
    # built again and the kept inputs are dropped; the next run with its inputs builds every job again, without it.
    # The share days keep their own inputs: the file came and went between their builds, so no day is built again.
    # The raw tables are those of the late file's full refresh, then the demo night's.
    _change(warehouse, *LATE_FILE)
    _run(manifest, warehouse, tmp_path, select="int_device_samples_tiered")
    alone = _rows(warehouse)[TIERED]
    assert not query(warehouse, f"select 1 from information_schema.tables where table_name = '{BUILT}'")
    assert alone == late[TIERED]
    _change(warehouse, *LATE_FILE_GONE)
    assert _incremental_equals_full(manifest, warehouse, tmp_path, demo) == (jobs, [])

    # A row held by a dbt test: it leaves raw, the ledger counts one row less and the quarantine names it. The days
    # the file spans are built again.
    dcgm = "source_file = 'telemetry/dcgm_b7.csv'"
    _change(
        warehouse,
        f"delete from raw.device_samples where {dcgm} and source_line = 2",
        f"update raw.ingested_files set rows_staged = rows_staged - 1 where {dcgm}",
        "insert into raw.quarantine values ('device_samples', 'telemetry/dcgm_b7.csv', "
        f" (select file_sha256 from raw.ingested_files where {dcgm}), 2, 'dbt:a_test', 'held', null)",
    )
    rebuilt, days = _incremental_equals_full(manifest, warehouse, tmp_path)
    assert _job(warehouse, "1001") in rebuilt and rebuilt < jobs  # the file spans several days' jobs, not all
    assert days == _span_days(warehouse, dcgm)

    # A file of samples without a job label from a host no job held: GPU time no job claims, on the days it spans.
    _change(
        warehouse,
        *(
            statement.replace("'telemetry/late.csv'", "'telemetry/unclaimed.csv'").replace("'late'", "'unclaimed'")
            for statement in LATE_FILE
        ),
        "update raw.device_samples set hostname = 'gpu-z', job_id = null where source_file = 'telemetry/unclaimed.csv'",
    )
    assert _incremental_equals_full(manifest, warehouse, tmp_path)[1] == _span_days(
        warehouse, "source_file = 'telemetry/unclaimed.csv'"
    )
    assert query(warehouse, "select sum(samples) from marts.fct_unattributed_gpu_hours") == query(
        warehouse, "select count(*) from raw.device_samples where source_file = 'telemetry/unclaimed.csv'"
    )

    # A job's end moves an hour earlier: it and the jobs its old or new window overlaps are built again, and the
    # days of its window.
    window = _span_days(warehouse, "job_id like '2003%'", "intermediate.int_jobs_attributed", "start_at")
    _change(warehouse, "update raw.scheduler_jobs set end_at = end_at - interval 1 hour where job_id like '2003%'")
    ((end_day,),) = query(warehouse, "select max(end_at)::date from raw.scheduler_jobs where job_id like '2003%'")
    days = [(window[0][0], max(window[0][1], end_day + timedelta(days=1)))]
    assert _incremental_equals_full(manifest, warehouse, tmp_path) == ({_job(warehouse, "2003")}, days)

    # A job gone from the scheduler's export: its samples name no running job now, GPU time no job claims, on the
    # days of its window.
    ((start, end),) = query(
        warehouse, "select start_at::date, end_at::date from intermediate.int_jobs_attributed where job_id = '1002'"
    )
    gone = _job(warehouse, "1002")
    _change(warehouse, "delete from raw.scheduler_jobs where job_id like '1002%'")
    rebuilt, days = _incremental_equals_full(manifest, warehouse, tmp_path)
    assert gone not in rebuilt and days == [(start, end + timedelta(days=1))]
    # Its samples (and those the earlier job's end left outside its window), each counted once.
    no_job = "label_names_no_running_job"
    assert query(
        warehouse, f"select count(*) from intermediate.int_device_samples_attributed where attribution = '{no_job}'"
    ) == query(warehouse, f"select sum(samples) from marts.fct_unattributed_gpu_hours where reason = '{no_job}'")
    assert query(
        warehouse,
        f"select count(*) from intermediate.int_device_samples_attributed where attribution = '{no_job}'"
        " and job_id = '1002'",
    ) == query(warehouse, "select count(*) from raw.device_samples where job_id = '1002'")

    # The contract's tier rule changes: every job and every day is built again.
    _change(
        warehouse,
        "update raw.contract_parameters set value = 0.9 where name = 'effective_min_gr_engine_active'",
    )
    assert _incremental_equals_full(manifest, warehouse, tmp_path) == (jobs - {gone}, None)

    # The tables by day selected alone: their inputs are not this run's, so every day is built again and their kept
    # inputs are dropped.
    _run(manifest, warehouse, tmp_path, select=" ".join(BY_DAY))
    assert _days_built(tmp_path) is None
    for model in BY_DAY:
        assert not query(warehouse, f"select 1 from information_schema.tables where table_name = '{model}_built'")


def _late_csv(landing: Path) -> None:
    """telemetry/late.csv, as DCGM writes the wide format: GPU 0 of gpu-a for job 1003, 30 s after each sample."""
    con = duckdb.connect()
    con.execute(
        "copy (select strftime(timestamp + interval 30 second, '%Y-%m-%dT%H:%M:%S') as timestamp,"
        " * exclude (timestamp)"
        f" from read_csv('{landing / 'telemetry' / 'dcgm_b7.csv'}') where job_id = 1003 and gpu = 0"
        f" and hostname = 'gpu-a' order by 1) to '{landing / 'telemetry' / 'late.csv'}' (header)"
    )
    con.close()


def test_a_night_with_a_late_telemetry_file_builds_its_job_again_as_a_new_warehouse_would(demo_run, tmp_path: Path):
    """The nightly job, end to end: the demo night's warehouse gets a late device-sample file for job 1003. The next
    night builds that job's tiers again, and only it, and its tier table and per-job figures equal those of a new
    warehouse that reads the same landing folder in one night."""
    from cost_pipeline.cli import run_pipeline

    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    shutil.copytree(demo_run.landing, landing)
    shutil.copy(demo_run.warehouse, warehouse)
    _late_csv(landing)
    assert run_pipeline(landing, warehouse)
    assert _rebuilt(warehouse) == {_job(warehouse, "1003")}
    new = tmp_path / "new" / "warehouse.duckdb"
    new.parent.mkdir()
    assert run_pipeline(landing, new)
    for table in (TIERED, "intermediate.int_job_utilization_tiered", "marts.fct_batch_costs"):
        rows = query(warehouse, f"select * from {table} order by all")
        assert rows == query(new, f"select * from {table} order by all"), table
    late = query(warehouse, f"select count(*) from {TIERED} where represented_seconds = 30")
    assert late == [
        (query(warehouse, "select 2 * count(*) from raw.device_samples where source_file like '%late.csv'")[0][0],)
    ]


def test_the_code_fingerprint_renders_every_macro_the_incremental_models_call():
    """device_samples_code (macros/device_samples_tiered_state.sql) renders the project's macros the incremental
    models and the attribution view call: a change to one of them builds every job and every day again."""
    manifest = json.loads(dbt_project.manifest_path.read_text())
    models = (
        "int_device_samples_tiered",
        "int_gpu_share_days",
        "int_unattributed_gpu_days",
        "int_device_samples_attributed",
        "stg_telemetry__device_samples",
    )
    called = {
        macro.split(".")[-1]
        for name in models
        for macro in manifest["nodes"][f"model.cost_pipeline.{name}"]["depends_on"]["macros"]
        if macro.startswith("macro.cost_pipeline.")
    }
    fingerprint = (DBT_PROJECT_DIR / "macros" / "device_samples_tiered_state.sql").read_text()
    rendered = fingerprint.split("macro device_samples_code(models)")[1].split("endmacro")[0]
    # The macros that decide what is built again (the hooks among them) are hashed as written: device_samples_code's
    # rules; those that only name the kept state or the hash itself are neither.
    rules = {
        "sample_days_to_build",
        "sample_days_forget",
        "periods_to_build",
        "periods_forget",
        "next_period",
        "inputs_fresh",
        "device_samples_tiered_forget",
        "remember_inputs",
        "changed_inputs",
        "device_samples_tiered_window",
        "periods_filter",
        "host_chunks_begin",
        "host_chunk_set",
        "host_chunks_rest",
    }
    named = {"kept_inputs", "device_samples_tiered_state", "device_samples_tiered_code", "device_samples_code"}
    listed = rendered.split("set rules = [")[1].split("]")[0]
    assert {rule.strip() for rule in listed.split(",") if rule.strip()} == rules
    called -= rules | named | {"log_row_count"}
    missing = {macro for macro in called if f"{macro.split('__')[-1]}(" not in rendered}  # dispatched: its name
    assert not missing, f"device_samples_code does not render {sorted(missing)}"


# One GPU of gpu-b without job labels, under a second spelling of the host's name, and a ninth GPU the host reports
# under that name, which no job holds: the unlabelled samples are attributed by host and time, and the host reported
# more GPUs than its job holds only when both names' GPUs are counted (host_has_unallocated_gpus). The names sort
# apart ('GPU-B.cluster.example' < 'gpu-a' < 'gpu-b'), so chunks of 500 samples put them in different chunks.
UNLABELLED_SECOND_NAME = (
    "update raw.device_samples set job_id = null, hostname = 'GPU-B.cluster.example'"
    " where hostname = 'gpu-b' and gpu = 1",
    "insert into raw.device_samples by name select * replace (8 as gpu, 'telemetry/ninth.csv' as source_file,"
    " 'ninth' as file_sha256) from raw.device_samples where hostname = 'GPU-B.cluster.example'",
    "insert into raw.ingested_files by name select 'device_samples' as source, 'telemetry/ninth.csv' as source_file,"
    " 'ninth' as file_sha256, count(*) as rows_in, count(*) as rows_staged, 0 as rows_quarantined"
    " from raw.device_samples where source_file = 'telemetry/ninth.csv'",
)


def test_a_build_in_chunks_of_hosts_equals_a_build_in_one(manifest: Manifest, warehouse: Path, tmp_path: Path):
    """The largest device-sample models are built a chunk of hosts at a time (macros/host_chunks.sql: at a
    cluster-day their windows spilled more than the disk held). Built whole in chunks of at most 500 samples, and
    then incrementally in chunks after a late file, they equal what one chunk builds; samples without a job label,
    under a host name spelled two ways, too."""
    chunked = ("--vars", '{"host_chunk_rows": 500}')
    _change(warehouse, *UNLABELLED_SECOND_NAME)
    _run(manifest, warehouse, tmp_path, "--full-refresh")
    one_chunk = _rows(warehouse)
    attributions = query(warehouse, "select distinct attribution from intermediate.int_device_samples_attributed")
    assert ("host_has_unallocated_gpus",) in attributions, attributions  # both names' GPUs counted
    _run(manifest, warehouse, tmp_path, "--full-refresh", *chunked, select=FROM_INPUTS)
    log = (tmp_path / "logs" / "dbt.log").read_text()
    assert re.search(r"set variable cost_pipeline_host_chunk = [1-9]\d*;", log), "the build ran in more than one chunk"
    assert _rows(warehouse) == one_chunk
    _change(warehouse, *LATE_FILE)
    _run(manifest, warehouse, tmp_path, *chunked)
    incremental = _rows(warehouse)
    assert incremental != one_chunk
    _run(manifest, warehouse, tmp_path, "--full-refresh", select=FROM_INPUTS)
    assert _rows(warehouse) == incremental


def _raw_sample_scans(plan: list[dict]) -> list[dict]:
    """The scans of the raw device-sample tables in a plan of ``explain (format json)``."""
    scans, nodes = [], list(plan)
    while nodes:
        node = nodes.pop()
        nodes.extend(node.get("children", []))
        if re.search(r"\.raw\.device_samples", str(node.get("extra_info", {}).get("Table", ""))):
            scans.append(node["extra_info"])
    return scans


def test_a_chunk_reads_only_its_own_hosts_samples(manifest: Manifest, warehouse: Path, tmp_path: Path):
    """A chunk's host names reach the query as constants, and DuckDB pushes them through the attribution view's joins
    into the scans of the raw samples: a chunk neither reads nor joins the other chunks' samples (a filter on
    ``hash(hostname)`` was applied after the joins, so at a cluster-day each of 18 chunks joined the whole day). The
    one scan of every host is the count of the GPUs a host reported at an unlabelled sample's instant (cluster, host
    name, GPU and time only), over every name the host goes by."""
    _change(warehouse, *UNLABELLED_SECOND_NAME)
    _run(manifest, warehouse, tmp_path, "--full-refresh", "--vars", '{"host_chunk_rows": 500}')
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        con.execute("set variable cost_pipeline_hosts = {'chunks': 2, 'hosts': [{'name': 'gpu-b', 'chunk': 1}]}")
        con.execute("set variable cost_pipeline_host_chunk = 1")
        con.execute("set variable cost_pipeline_chunk_hosts = ['gpu-b']")
        for model in ("int_device_samples_tiered", "int_gpu_share_days"):
            sql = next((tmp_path / "target" / "compiled").rglob(f"{model}.sql")).read_text()
            ((_, plan),) = con.execute(f"explain (format json) {sql}").fetchall()
            scans = [
                (scan.get("Filters", ""), sorted(scan["Projections"]))
                for scan in _raw_sample_scans(json.loads(plan))
                if scan.get("Estimated Cardinality") != "0"  # the empty raw tables of the demo
            ]
            assert scans, model
            unfiltered = [projected for filters, projected in scans if "'gpu-b'" not in str(filters)]
            gpu_instant = ["cluster", "gpu", "hostname", "timestamp"]
            assert all(projected == gpu_instant for projected in unfiltered), (model, scans)
            assert len(unfiltered) < len(scans), (model, scans)
            # Read alone, the chunk's rows are gpu-b's only.
            ((hosts,),) = con.execute(f"select list(distinct hostname) from ({sql})").fetchall()
            assert hosts == ["gpu-b"], (model, hosts)
    finally:
        con.close()
