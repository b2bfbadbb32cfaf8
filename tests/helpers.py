"""Small helpers the test modules share."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest

from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, WAREHOUSE_VARIABLE
from cost_pipeline.duckdb_memory import dbt_environment

if TYPE_CHECKING:
    from dbt.cli.main import dbtRunnerResult
    from dbt.contracts.graph.manifest import Manifest


def query(warehouse: str | Path, sql: str, params: list | None = None) -> list[tuple]:
    """Rows of ``sql`` on a read-only connection to ``warehouse``, closed before returning."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def source_state(warehouse: str | Path, source: str) -> dict[str, list[tuple]]:
    """What a load of ``source`` leaves in ``warehouse``, each sorted: its raw rows, its quarantined lines and its
    file ledger (but since when a file is missing), to compare a load with a full load of the same folder."""
    return {
        "raw": query(warehouse, f'select * from raw."{source}" order by all'),
        "quarantine": query(warehouse, "select * from raw.quarantine where source = ? order by all", [source]),
        "ledger": query(
            warehouse,
            "select * exclude (missing_since) from raw.ingested_files where source = ? order by all",
            [source],
        ),
    }


def dbt_target(tmp_path: Path, warehouse: str | Path) -> Path:
    """A dbt target folder of its own under ``tmp_path``, given the prepared partial parse for ``warehouse``: dbt,
    run from the warehouse's folder as the night runs it (``cost-pipeline-dbt``), then parses only what changed,
    not the whole project (several seconds a command)."""
    from cost_pipeline.dbt_setup import seed_partial_parse

    target = tmp_path / "target"
    seed_partial_parse(target, Path(warehouse))
    return target


def _dbt_show(tmp_path: Path, what: list[str], env: dict[str, str]) -> list[dict]:
    """The rows ``dbt show`` returns for ``what``, run on the project with ``env`` (its own target and logs)."""
    import json
    import subprocess

    from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, warehouse_folder_dbt_executable

    target = dbt_target(tmp_path, env["COST_WAREHOUSE"])
    shown = subprocess.run(
        [warehouse_folder_dbt_executable(), "show", "--quiet", "--output", "json", *what]
        + ["--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR)]
        + ["--target-path", str(target), "--log-path", str(tmp_path / "logs")],
        cwd=DBT_PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(shown.stdout)["show"]


def dbt_show(tmp_path: Path, sql: str, env: dict[str, str]) -> dict:
    """The one row ``dbt show --inline sql`` returns, run on the project with ``env`` (its own target and logs)."""
    (row,) = _dbt_show(tmp_path, ["--inline", sql], env)
    return row


def dbt_show_model(tmp_path: Path, model: str, env: dict[str, str]) -> list[dict]:
    """Every row of ``model``'s SQL as ``dbt show`` runs it on the warehouse ``env`` names: the model as its inputs
    there make it, built or not (not its tests, which read it as built)."""
    return _dbt_show(tmp_path, ["--select", model, "--limit", "-1", "--indirect-selection", "empty"], env)


def staged_rows(tmp_path: Path, source: str, files: dict[str, Sequence[str]], model: str) -> list[dict]:
    """Every row of the staging ``model`` after the contract loads ``files`` (landing path -> lines) as ``source``
    into a new warehouse under ``tmp_path`` (every row staged or quarantined)."""
    import os

    from cost_pipeline.contract import load_contract
    from cost_pipeline.ingest.lib.warehouse import connect
    from cost_pipeline.ingest.registry import load_named

    landing = tmp_path / "landing"
    for name, lines in files.items():
        (landing / name).parent.mkdir(parents=True, exist_ok=True)
        (landing / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    warehouse = tmp_path / "warehouse.duckdb"
    con = connect(warehouse, readable_dir=landing)
    try:
        assert load_named(con, landing, source, load_contract()).conserved
    finally:
        con.close()
    return dbt_show_model(tmp_path, model, {**os.environ, "COST_WAREHOUSE": str(warehouse)})


def dbt_test(
    tmp_path: Path, warehouse: Path, select: str, command: str = "test", *args: str
) -> tuple[int, str, list[dict]]:
    """``dbt test --select select`` on ``warehouse`` (its own target and logs under ``tmp_path``): the exit code, the
    output and run_results.json's results. ``command="build"`` builds the selected models first (a view over raw
    that a new warehouse lacks), then tests them; ``args`` are more of dbt's options."""
    import json
    import os
    import subprocess

    from cost_pipeline.dbt_setup import DBT_PROJECT_DIR, warehouse_folder_dbt_executable

    target = dbt_target(tmp_path, warehouse)
    finished = subprocess.run(
        [warehouse_folder_dbt_executable(), command, "--select", select, *args, "--target-path", str(target)],
        cwd=DBT_PROJECT_DIR,
        env={**os.environ, "COST_WAREHOUSE": str(warehouse), "DBT_LOG_PATH": str(tmp_path / "logs")},
        capture_output=True,
        text=True,
    )
    results = json.loads((target / "run_results.json").read_text(encoding="utf-8"))["results"]
    return finished.returncode, finished.stdout, results


def nightly_assets_downstream_of(
    sources: Sequence[tuple[str, ...]], covering: Iterable[str] = ()
) -> dict[str, list[str]]:
    """The nightly job's assets that ``sources`` (raw asset keys) feed, themselves included: what a night after a
    change to those sources only must run again. ``covering``: the assets (``marts/fct_batch_costs``) a test reads
    after such a night, which must be among them (``assert_covers``)."""
    import dagster as dg

    from cost_pipeline.cli import nightly_assets

    keys = nightly_assets(dg.AssetSelection.assets(*(dg.AssetKey(list(key)) for key in sources)).downstream())
    assert_covers(keys, covering, f"downstream of {', '.join('/'.join(key) for key in sources)}")
    return keys


def assert_covers(selected: Iterable[str], covering: Iterable[str], selection: str) -> None:
    """Every asset of ``covering`` (user strings, ``marts/fct_batch_costs``) is in ``selected``: a partial night does
    not leave an asset its test reads as the night before built it. ``selection`` names the selection in the
    message."""
    missing = sorted(set(covering) - set(selected))
    assert not missing, f"not in the night's selection ({selection}), so not built again: {', '.join(missing)}"


@dataclass(frozen=True)
class Night:
    """One ``cost-pipeline run`` in this process: its folders, exit code and output."""

    landing: Path
    warehouse: Path
    code: int
    out: str
    err: str


def tamper_raw(warehouse: Path, tamper: Sequence[str]) -> None:
    """Run the ``tamper`` statements on the warehouse: raw rows changed behind the contract's back, as a defect of
    the contract would let them through. Changed in place, not by a load, they are changed behind the file ledger
    too, which the incremental tables read to find what changed (stg_serving__requests and int_requests_costed by
    month, the device-sample tables by job and day): their kept inputs (``<model>_built``) are dropped, so the next
    build makes every month, day and job again, as it would those of a file loaded with such rows."""
    if not tamper:
        return
    with duckdb.connect(str(warehouse)) as con:
        for statement in tamper:
            con.execute(statement)
        kept = con.execute(
            "select table_schema, table_name from information_schema.tables where ends_with(table_name, '_built')"
        ).fetchall()
        for schema, table in kept:
            con.execute(f'drop table "{schema}"."{table}"')


def cli_night(
    landing: Path,
    warehouse: Path,
    tamper: Sequence[str] = (),
    select: str | None = None,
    covering: Iterable[str] = (),
) -> Night:
    """``cost-pipeline run`` on ``landing`` and ``warehouse``, after the ``tamper`` statements on the warehouse (raw
    rows changed behind the contract's back, as a defect of the contract would let them through). ``select``: only
    those assets of the nightly job (``run --select``, Dagster's asset selection syntax: ``key:raw/serving_requests+``
    is that source and every asset downstream of it), which must include every asset of ``covering``
    (``assert_covers``)."""
    from cost_pipeline.cli import main

    selected: list[str] = []
    if select is not None:
        import dagster as dg

        from cost_pipeline.cli import nightly_assets

        assert_covers(nightly_assets(dg.AssetSelection.from_string(select)), covering, select)
        selected = ["--select", select]
    else:
        assert not covering, "covering names what a partial night (select) must run; a whole night runs everything"
    tamper_raw(warehouse, tamper)
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["run", "--landing", str(landing), "--warehouse", str(warehouse), *selected])
    return Night(landing, warehouse, code, out.getvalue(), err.getvalue())


def sacct_text(records: Iterable[Mapping[str, str]]) -> str:
    """Records (each a value for every field of ``SACCT_FIELDS``) as ``sacct --parsable2`` writes them: the header, then
    a line each."""
    from cost_pipeline.ingest.scheduler import SACCT_FIELDS

    lines = ["|".join(SACCT_FIELDS), *("|".join(record[field] for field in SACCT_FIELDS) for record in records)]
    return "\n".join(lines) + "\n"


def partial_night(
    landing: Path,
    warehouse: Path,
    sources: Sequence[tuple[str, ...]],
    tamper: Sequence[str] = (),
    covering: Iterable[str] = (),
) -> Night:
    """``cli_night``'s night, of only ``sources``' raw assets (their files changed since the night before) and every
    asset of the nightly job downstream of them (``nightly_assets_downstream_of``): the rest reads nothing the change
    touches and stays as the night before built it. ``covering``: the assets its test reads, which must be among
    them. Printed and ended as ``cost-pipeline run`` does (``cost_pipeline.cli.night`` and ``exit_code``); the
    command's own stderr lines are not kept here (``cli_night`` with ``select`` keeps them)."""
    from cost_pipeline.cli import exit_code, night

    keys = list(nightly_assets_downstream_of(sources, covering).values())
    tamper_raw(warehouse, tamper)
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        ok, _, findings = night(landing, warehouse, {}, verbose=False, out=out, asset_keys=keys)
    return Night(landing, warehouse, exit_code(ok, findings), out.getvalue(), "")


# The demo's FOCUS export, and the ResourceId of its first line: B-10's cloud job, 102.40, untagged.
DEMO_FOCUS = Path("billing") / "aws_focus_2026-11.csv"
# The normalised device-sample CSV's header (docs/inputs.md, raw.device_samples): the columns every such file has.
DEVICE_SAMPLES_HEADER = (
    "timestamp,hostname,gpu,job_id,DCGM_FI_PROF_GR_ENGINE_ACTIVE,DCGM_FI_PROF_SM_ACTIVE,"
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE,DCGM_FI_PROF_NVLINK_TX_BYTES,DCGM_FI_PROF_NVLINK_RX_BYTES,"
    "DCGM_FI_DEV_POWER_USAGE"
)
DEMO_CLOUD_JOB = "arn:aws:eks:us-east-1:123456789012:job/b10-eval-cloud"


def scrape_metrics(effective: bool, power: float) -> dict[str, float]:
    """One dcgm-exporter scrape's metrics: an effective GPU (engine 0.93) or an idle one (engine 0.05), no NVLink
    traffic, drawing ``power`` W."""
    return {
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.93 if effective else 0.05,
        "DCGM_FI_PROF_SM_ACTIVE": 0.8 if effective else 0.04,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.4 if effective else 0.0,
        "DCGM_FI_PROF_NVLINK_TX_BYTES": 0,
        "DCGM_FI_PROF_NVLINK_RX_BYTES": 0,
        "DCGM_FI_DEV_POWER_USAGE": power,
    }


def demo_focus_line(
    landing: Path, resource_id: str = DEMO_CLOUD_JOB, amount: str | None = None, batch_tag: str | None = None
) -> str:
    """The demo FOCUS export's first line with another ResourceId, amount (its four costs) or Tags batch key."""
    line = (landing / DEMO_FOCUS).read_text(encoding="utf-8").splitlines()[1].replace(DEMO_CLOUD_JOB, resource_id)
    if amount is not None:
        line = line.replace(",171.37,171.37,102.40,102.40,", f",{amount},{amount},{amount},{amount},")
    if batch_tag is not None:
        line = line.replace(",,AWS,AWS,AWS,", f',"{{""batch_id"": ""{batch_tag}""}}",AWS,AWS,AWS,')
    return line


def append_demo_focus_lines(landing: Path, *lines: str) -> None:
    """``lines`` added at the end of the demo's FOCUS export."""
    path = landing / DEMO_FOCUS
    path.write_text(
        path.read_text(encoding="utf-8").rstrip("\n") + "\n" + "".join(f"{line}\n" for line in lines), encoding="utf-8"
    )


# The batch registry's header (docs/inputs.md, raw.batch_registry): the attributes, the contract version and the plan,
# which a line may leave blank (",,,,,"), never leave out of the header.
REGISTRY_HEADER = (
    "batch_id,project,goal,team,data_version,model_version,code_version,config_version,contract_version,"
    "budget_cost,budget_gpu_hours,max_trial_rounds,stop_condition,variance_boundary_pct\n"
)


def one_batch_landing(tmp_path: Path) -> Path:
    """A landing folder with a registry of one batch, B-1, and an empty scheduler folder."""
    landing = tmp_path / "landing"
    (landing / "registry").mkdir(parents=True)
    (landing / "registry" / "batches.csv").write_text(
        REGISTRY_HEADER + "B-1,p,g,t,d,m,c,cfg,v1,,,,,\n",
        encoding="utf-8",
    )
    (landing / "scheduler").mkdir()
    return landing


def dbt_in_process(folder: Path, *args: str, manifest: Manifest | None = None) -> dbtRunnerResult:
    """dbt in this process as the night runs it (``cost-pipeline-dbt``): from the warehouse's folder ``folder``, on
    its ``warehouse.duckdb`` (``COST_WAREHOUSE``), the profile's memory limit the night's. dbt reads the profile
    again at every command (a new adapter each, on this command's warehouse); the DuckDB database it opened is closed
    when it ends, so this process's own connections to the warehouse may open it again, and its loggers are let go
    (the one on pytest's captured output of this test, the log file in its folder)."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    from dbt.cli.main import dbtRunner
    from dbt_common.events.event_manager_client import cleanup_event_logger

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(folder)
            for name, value in {WAREHOUSE_VARIABLE: "warehouse.duckdb", **dbt_environment()}.items():
                patch.setenv(name, value)
            ran = dbtRunner(manifest=manifest).invoke(
                [*args, "--quiet", "--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR)]
            )
    finally:
        if DuckDBConnectionManager._ENV is not None:  # dbt-duckdb keeps the database open for its next command
            DuckDBConnectionManager._ENV.close()
        DuckDBConnectionManager.close_all_connections()
        cleanup_event_logger()
    if not ran.success:
        failed = [f"{result.node.name}: {result.message}" for result in getattr(ran.result, "results", ())]
        raise AssertionError(f"dbt {' '.join(args)} failed: {ran.exception or failed}")
    return ran
