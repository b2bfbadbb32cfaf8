"""The prepared dbt manifest is reused while the project is unchanged, and re-parsed after an edit or when the
warehouse's database name changes; the first build on a warehouse in a new folder starts from the prepared parse,
and a build's partial-parse file is kept for the next build on the same warehouse (issue 13, CI time; issue 11, fast
launches; issue 15, the night's fixed cost)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from cost_pipeline.dbt_setup import (
    BUILD_FOLDER_MIN_AGE_SECONDS,
    BUILD_FOLDERS_KEPT,
    DBT_PROJECT_DIR,
    NOT_PROJECT_SOURCE,
    PARTIAL_PARSE_FILE,
    PARTIAL_PARSE_STATES,
    PREPARED_FILES,
    PREPARED_KEPT,
    dbt_executable,
    fingerprint_path,
    keep_partial_parse,
    manifest_fingerprint,
    manifest_path,
    partial_parse_state,
    prepare_manifest,
    prepared_parse,
    prune_build_folders,
    seed_partial_parse,
    warehouse_folder_dbt_executable,
)

MODEL = Path("models/marts/finance/fct_batch_costs.sql")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the dbt project, so editing a model never touches the real one."""
    monkeypatch.setenv("COST_WAREHOUSE", str(tmp_path / "a" / "warehouse.duckdb"))
    copy = tmp_path / "dbt_project"
    shutil.copytree(DBT_PROJECT_DIR, copy, ignore=shutil.ignore_patterns(*NOT_PROJECT_SOURCE))
    return copy


def _written(path: Path) -> tuple[int, int]:
    """Identity of the file's last write: os.replace gives a new inode, a rewrite a new mtime."""
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns


def _nodes(manifest: Path) -> dict:
    return json.loads(manifest.read_text(encoding="utf-8"))["nodes"]


def test_a_second_prepare_reuses_the_manifest_and_an_edit_parses_again(project, tmp_path, monkeypatch):
    manifest = prepare_manifest(project)
    first = _written(manifest)
    assert fingerprint_path(project).read_text(encoding="utf-8").strip() == manifest_fingerprint(project)
    models = [node for node in _nodes(manifest).values() if node["resource_type"] == "model"]
    assert {node["database"] for node in models} == {"warehouse"}, "dbt-duckdb names the database after the file"

    assert prepare_manifest(project) == manifest
    assert _written(manifest) == first, "an unchanged project must not be parsed again"

    monkeypatch.setenv("COST_WAREHOUSE", str(tmp_path / "b" / "warehouse.duckdb"))
    prepare_manifest(project)
    assert _written(manifest) == first, "the same warehouse file name in another folder shares the manifest"
    monkeypatch.setenv("COST_WAREHOUSE", str(tmp_path / "b" / "night.duckdb"))
    assert fingerprint_path(project).read_text(encoding="utf-8").strip() != manifest_fingerprint(project), (
        "another file name is another database name in the manifest"
    )

    monkeypatch.setenv("COST_WAREHOUSE", str(tmp_path / "a" / "warehouse.duckdb"))
    edited = project / MODEL
    edited.write_text(edited.read_text(encoding="utf-8") + "\n-- edited by test_dbt_setup\n", encoding="utf-8")
    prepare_manifest(project)
    assert _written(manifest) != first, "an edited model must be parsed again"
    model = _nodes(manifest)["model.cost_pipeline.fct_batch_costs"]
    assert "-- edited by test_dbt_setup" in model["raw_code"]


def test_warehouses_of_two_file_names_take_turns_without_parsing_again(project, tmp_path, monkeypatch):
    """Nights on ``warehouse.duckdb`` and ``night.duckdb`` alternating (two warehouses, or the suite's two workers)
    parsed the whole project at every turn; each name's parse is kept and put back. A build on a new warehouse of
    the first name is handed that name's partial-parse file, not target/'s (by then the other name's)."""
    from cost_pipeline import dbt_setup

    prepare_manifest(project)
    monkeypatch.setenv("COST_WAREHOUSE", str(tmp_path / "b" / "night.duckdb"))
    prepare_manifest(project)
    assert {node["database"] for node in _nodes(manifest_path(project)).values()} == {"night"}

    def no_parse(*_: object) -> None:
        raise AssertionError("dbt parsed a project whose parse was kept")

    monkeypatch.setattr(dbt_setup, "_parse_into", no_parse)
    monkeypatch.setenv("COST_WAREHOUSE", str(tmp_path / "c" / "warehouse.duckdb"))
    prepare_manifest(project)
    assert {node["database"] for node in _nodes(manifest_path(project)).values()} == {"warehouse"}
    assert fingerprint_path(project).read_text(encoding="utf-8").strip() == manifest_fingerprint(project)
    warehouse_state = (project / "target" / PARTIAL_PARSE_FILE).read_bytes()

    monkeypatch.setenv("COST_WAREHOUSE", str(tmp_path / "d" / "night.duckdb"))
    prepare_manifest(project)
    night_state = (project / "target" / PARTIAL_PARSE_FILE).read_bytes()
    assert night_state != warehouse_state
    seed_partial_parse(tmp_path / "build", tmp_path / "e" / "warehouse.duckdb", project)
    assert (tmp_path / "build" / PARTIAL_PARSE_FILE).read_bytes() == warehouse_state
    (tmp_path / "build" / PARTIAL_PARSE_FILE).write_bytes(b"state of the build on e")
    keep_partial_parse(tmp_path / "build", tmp_path / "e" / "warehouse.duckdb", project)
    seed_partial_parse(tmp_path / "next", tmp_path / "e" / "warehouse.duckdb", project)
    assert (tmp_path / "next" / PARTIAL_PARSE_FILE).read_bytes() == b"state of the build on e", (
        "the warehouse's own last build comes before its file name's kept parse"
    )
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((project / "target" / "manifest.json").stat().st_mode) == 0o666 & ~umask, (
        "a restored manifest has the permissions dbt writes it with, not a temporary file's 0600"
    )


def test_only_the_newest_parses_are_kept(project, monkeypatch):
    from cost_pipeline import dbt_setup

    monkeypatch.setattr(
        dbt_setup,
        "_parse_into",
        lambda _project, target: [(target / name).write_text(name, encoding="utf-8") for name in PREPARED_FILES],
    )
    fingerprints = []
    for number in range(PREPARED_KEPT + 2):
        monkeypatch.setenv("COST_WAREHOUSE", f"/w/warehouse_{number}.duckdb")
        prepare_manifest(project)
        fingerprints.append(manifest_fingerprint(project))
        os.utime(prepared_parse(fingerprints[-1], project), ns=(number * 10**9, number * 10**9))
    kept = {path.name for path in (project / "target" / "prepared").iterdir()}
    assert kept == {prepared_parse(fingerprint, project).name for fingerprint in fingerprints[2:]}


def test_dbt_output_folders_do_not_change_the_fingerprint(project):
    before = manifest_fingerprint(project)
    for folder in ("target", "logs"):
        (project / folder).mkdir(exist_ok=True)
        (project / folder / "anything.txt").write_text("x", encoding="utf-8")
    assert manifest_fingerprint(project) == before
    (project / "macros" / "new_macro.sql").write_text("{% macro new_macro() %}1{% endmacro %}\n", encoding="utf-8")
    assert manifest_fingerprint(project) != before


def test_a_build_hands_its_partial_parse_file_to_the_next_build_on_the_same_warehouse(project, tmp_path):
    warehouse = tmp_path / "a" / "warehouse.duckdb"
    first, second = tmp_path / "build-1", tmp_path / "build-2"
    seed_partial_parse(first, warehouse, project)
    assert not (first / PARTIAL_PARSE_FILE).exists(), "no build on this warehouse yet"
    (first / PARTIAL_PARSE_FILE).write_bytes(b"state of build 1")
    keep_partial_parse(first, warehouse, project)
    seed_partial_parse(second, warehouse, project)
    assert (second / PARTIAL_PARSE_FILE).read_bytes() == b"state of build 1"
    seed_partial_parse(tmp_path / "build-3", tmp_path / "b" / "warehouse.duckdb", project)
    assert not (tmp_path / "build-3" / PARTIAL_PARSE_FILE).exists(), "another warehouse path, another state"


def _parse_output(dbt: str, project: Path, warehouse: Path, target: Path) -> str:
    """``dbt parse`` as a night's build runs it (from the project folder, the profiles folder in the environment),
    handed the prepared partial-parse file."""
    target.mkdir(parents=True)
    shutil.copyfile(project / "target" / PARTIAL_PARSE_FILE, target / PARTIAL_PARSE_FILE)
    environment = {**os.environ, "COST_WAREHOUSE": str(warehouse), "DBT_PROFILES_DIR": str(project)}
    parsed = subprocess.run(
        [dbt, "parse", "--target-path", str(target), "--log-path", str(target)],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
    )
    assert parsed.returncode == 0, parsed.stdout + parsed.stderr
    assert (target / "manifest.json").exists(), "a parse writes its manifest"
    return parsed.stdout


def test_the_first_build_on_a_warehouse_in_a_new_folder_parses_only_what_changed(project, tmp_path, monkeypatch):
    """dbt parses the whole project again when the profile's connection (the warehouse path) differs from the
    prepared parse's; the nightly build's dbt runs from the warehouse's folder, where the connection is the same.
    (A copy of the project: other tests' nights prepare the real one for warehouses of other names meanwhile.)"""
    monkeypatch.delenv("COST_DUCKDB_MEMORY_LIMIT", raising=False)
    prepare_manifest(project)
    warehouse = tmp_path / "never built here" / "warehouse.duckdb"
    warehouse.parent.mkdir()
    full = "Unable to do partial parsing because profile has changed"
    assert full in _parse_output(dbt_executable(), project, warehouse, tmp_path / "plain")
    from_its_folder = _parse_output(warehouse_folder_dbt_executable(), project, warehouse, tmp_path / "from its folder")
    assert full not in from_its_folder and "Unable to do partial parsing" not in from_its_folder
    assert not list(warehouse.parent.iterdir()), "a parse opens no warehouse"


def test_a_build_through_cost_pipeline_dbt_writes_no_manifest_of_its_own(project, tmp_path):
    """The night reads the prepared manifest, never the build's (cost_pipeline.dbt_build_manifest): dbt run, build
    and test write no manifest, semantic manifest or pickled graph into their target folder; plain dbt does."""
    warehouse = tmp_path / "built here" / "warehouse.duckdb"
    warehouse.parent.mkdir()
    environment = {**os.environ, "COST_WAREHOUSE": str(warehouse), "DBT_PROFILES_DIR": str(project)}
    written = {}
    for dbt in (dbt_executable(), warehouse_folder_dbt_executable()):
        target = tmp_path / Path(dbt).name
        built = subprocess.run(
            [dbt, "build", "--select", "fqn:no_such_node", "--target-path", str(target), "--log-path", str(target)],
            cwd=project,
            env=environment,
            capture_output=True,
            text=True,
        )
        assert built.returncode == 0, built.stdout + built.stderr
        written[Path(dbt).name] = [
            name for name in ("manifest.json", "semantic_manifest.json", "graph.gpickle") if (target / name).exists()
        ]
    assert written == {"dbt": ["manifest.json", "semantic_manifest.json", "graph.gpickle"], "cost-pipeline-dbt": []}


def test_only_the_newest_partial_parse_files_are_kept(project, tmp_path):
    for number in range(PARTIAL_PARSE_STATES + 3):
        build = tmp_path / f"build-{number}"
        build.mkdir()
        (build / PARTIAL_PARSE_FILE).write_bytes(b"state")
        os.utime(build / PARTIAL_PARSE_FILE, ns=(number * 10**9, number * 10**9))  # written one second apart
        keep_partial_parse(build, tmp_path / f"w{number}" / "warehouse.duckdb", project)
    kept = {path.name for path in partial_parse_state(tmp_path / "w0.duckdb", project).parent.glob("*.msgpack")}
    newest = {
        partial_parse_state(tmp_path / f"w{number}" / "warehouse.duckdb", project).name
        for number in range(3, PARTIAL_PARSE_STATES + 3)
    }
    assert kept == newest


def test_old_build_folders_go_but_the_newest_and_any_written_today_stay(project):
    """Each build's target folder (25 MB for the demo) used to stay for good: 9 GB a year of nightly runs."""
    now = 1_900_000_000.0
    day = BUILD_FOLDER_MIN_AGE_SECONDS
    ages = [60 * n for n in range(BUILD_FOLDERS_KEPT)] + [day / 2, day + 60, 3 * day]  # seconds before now
    folders = []
    for number, age in enumerate(ages):
        folder = project / "target" / f"cost_models-run{number}-{number:07d}"
        (folder / "compiled").mkdir(parents=True)
        os.utime(folder, (now - age, now - age))
        folders.append(folder)
    other = project / "target" / "partial_parse"
    other.mkdir()
    os.utime(other, (now - 9 * day, now - 9 * day))

    removed = prune_build_folders("cost_models", project, now=now)

    assert sorted(removed) == sorted(folders[-2:]), "beyond the newest, only folders older than a day go"
    assert all(folder.is_dir() for folder in folders[:-2]) and other.is_dir()
    assert not any(folder.exists() for folder in folders[-2:])


def test_the_fingerprint_does_not_read_dbt_target_folder(project):
    """The fingerprint walked every build folder under target/ before filtering them out (200,000 paths, 3 s a
    night after a few months); a file there must not change it either."""
    before = manifest_fingerprint(project)
    (project / "target" / "cost_models-x" / "run").mkdir(parents=True)
    (project / "target" / "cost_models-x" / "run" / "model.sql").write_text("select 1", encoding="utf-8")
    assert manifest_fingerprint(project) == before
    (project / "models" / "extra.sql").write_text("select 1 as one", encoding="utf-8")
    assert manifest_fingerprint(project) != before


def test_the_dbt_resource_knows_the_version_dbt_itself_reports():
    """The nightly job's dbt resource reads dbt's version from the installed package instead of starting
    ``dbt --version`` every night: it must be the version that dbt reports."""
    from dagster_dbt import DbtCliResource

    from cost_pipeline.dbt_setup import dbt_project
    from cost_pipeline.defs.dbt import ProjectDbtCli

    ours = ProjectDbtCli(project_dir=dbt_project, dbt_executable=warehouse_folder_dbt_executable())
    asked = DbtCliResource(project_dir=dbt_project, dbt_executable=dbt_executable())
    assert ours._cli_version == asked._cli_version


def test_a_project_that_does_not_parse_ends_the_night_with_dbt_s_error_last(project, tmp_path, monkeypatch, capsys):
    """A model that names a model that does not exist: dbt parse fails before anything runs, and the CLI's last line
    is dbt's error, naming the model's file (no traceback), with exit 1."""
    from cost_pipeline import dbt_setup
    from cost_pipeline.cli import main

    (project / "models" / "marts" / "zz_broken.sql").write_text("select {{ ref('no_such_model') }} as x\n")
    monkeypatch.setattr(dbt_setup, "prepare_manifest", lambda: prepare_manifest(project))
    landing = tmp_path / "landing" / "scheduler"
    landing.mkdir(parents=True)
    (landing / "sacct.txt").write_text("JobID|State\n", encoding="utf-8")
    warehouse = tmp_path / "night" / "warehouse.duckdb"
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    assert main(["run", "--landing", str(landing.parent), "--warehouse", str(warehouse)]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "cost-pipeline: the dbt project does not parse (dbt parse exited 2), nothing ran: Compilation Error: Model "
        "'model.cost_pipeline.zz_broken' (models/marts/zz_broken.sql) depends on a node named 'no_such_model' which "
        "was not found"
    )
