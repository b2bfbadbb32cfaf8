"""Where the dbt project is, which dbt runs it, and how its manifest is prepared.

Kept apart from ``defs/dbt.py`` because ``@dbt_assets`` needs the manifest at import: the CLI and the test
session call ``prepare_manifest`` first, explicitly.

``dbt parse`` costs seconds (a full parse of the project is about 7 s on a quiet machine), and every night, CLI run
and test used to pay it. The manifest is now reused while nothing it depends on has changed: a fingerprint of those
inputs is written beside it (``target/manifest.fingerprint``) and dbt parses only when the fingerprint differs or
the manifest is missing. What the manifest depends on:

- every file of the project dbt reads (all files under ``dbt_project/`` except dbt's own output folders);
- the installed dbt-core and dbt-duckdb versions;
- the values of the environment variables the project's files read with ``env_var()``, except the warehouse
  path ``COST_WAREHOUSE``. Of that path only the file's stem reaches the manifest: dbt-duckdb names the database
  after it (``warehouse.duckdb`` -> ``"warehouse"."marts"."fct_batch_costs"``). Two warehouses of the same file name
  in different folders share one manifest. The DuckDB memory limit (``duckdb_memory``) is read by the profile
  only and never reaches the manifest.

The last few parses are kept by fingerprint (``target/prepared/<its first 16 characters>/``: the manifest and dbt's
partial-parse file). Nights on warehouses of different file names (a finance and an engineering warehouse, the test
suite's many warehouses) then take turns with a copy instead of a full parse each (about 7 s, 11 s under load).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

from dagster_dbt import DbtProject

from cost_pipeline.command_error import CommandError

# The two dbt commands are defined where they run without Dagster, and imported from here beside the project.
from cost_pipeline.dbt_in_warehouse_folder import (  # noqa: F401
    WAREHOUSE_VARIABLE,
    dbt_executable,
    warehouse_folder_dbt_executable,
)
from cost_pipeline.duckdb_memory import MEMORY_LIMIT_VARIABLE, dbt_environment

DBT_PROJECT_DIR = Path(__file__).resolve().parents[1] / "dbt_project"

dbt_project = DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR)

# Folders dbt writes into or installs into, not part of the project's source.
NOT_PROJECT_SOURCE = frozenset({"target", "logs", "dbt_packages", "__pycache__"})
# Read by profiles.yml's settings only: it changes how DuckDB runs, not what dbt parses.
PROFILE_ONLY_VARIABLES = frozenset({MEMORY_LIMIT_VARIABLE})
PARTIAL_PARSE_FILE = "partial_parse.msgpack"
_ENV_VAR_CALL = re.compile(r"""env_var\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]""")


def manifest_path(project_dir: Path = DBT_PROJECT_DIR) -> Path:
    return project_dir / "target" / "manifest.json"


def fingerprint_path(project_dir: Path = DBT_PROJECT_DIR) -> Path:
    return project_dir / "target" / "manifest.fingerprint"


def _project_files(project_dir: Path) -> list[Path]:
    """The project's source files; dbt's own folders are not walked at all (target/ holds every build's folder)."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(project_dir):
        subfolders[:] = [name for name in subfolders if name not in NOT_PROJECT_SOURCE]
        found.extend(Path(folder) / name for name in files if not name.startswith("."))
    return sorted(found)


def _default_warehouse(project_dir: Path) -> str:
    """The path profiles.yml falls back to when COST_WAREHOUSE is unset."""
    profiles = (project_dir / "profiles.yml").read_text(encoding="utf-8")
    found = re.search(r"""env_var\(\s*['"]COST_WAREHOUSE['"]\s*,\s*['"]([^'"]+)['"]""", profiles)
    return found.group(1) if found else ""


def manifest_fingerprint(project_dir: Path = DBT_PROJECT_DIR, warehouse: Path | None = None) -> str:
    """sha256 over everything the parsed manifest depends on (see the module docstring), for ``warehouse`` if given,
    else for the warehouse ``COST_WAREHOUSE`` names."""
    digest = hashlib.sha256()
    variables: set[str] = set()
    for path in _project_files(project_dir):
        content = path.read_bytes()
        digest.update(path.relative_to(project_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(content).digest())
        variables.update(_ENV_VAR_CALL.findall(content.decode("utf-8", errors="replace")))
    for package in ("dbt-core", "dbt-duckdb"):
        digest.update(f"{package}=={version(package)}\0".encode())
    for name in sorted(variables - PROFILE_ONLY_VARIABLES):
        value = os.environ.get(name)
        if name == WAREHOUSE_VARIABLE:
            value = Path(warehouse or value or _default_warehouse(project_dir)).stem
        digest.update(f"{name}={value!r}\0".encode())
    return digest.hexdigest()


@contextmanager
def _prepare_lock(target: Path) -> Iterator[None]:
    """One process at a time checks and rewrites the manifest; the others wait, then find it current."""
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".prepare.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextmanager
def _replaced_atomically(destination: Path) -> Iterator[Path]:
    """A temporary file beside ``destination`` to write, renamed over it when the block ends (a reader never sees a
    half-written file); removed if the block raises."""
    with tempfile.NamedTemporaryFile(dir=destination.parent, prefix=f".{destination.name}.", delete=False) as handle:
        pass
    temporary = Path(handle.name)
    try:
        yield temporary
        os.replace(temporary, destination)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


class ProjectDoesNotParse(CommandError):
    """``dbt parse`` failed: dbt's own error, which names the model or yml file, on one line (exit 1)."""


def _dbt_error(output: str) -> str:
    """dbt's error output on one line: no colours, no time stamps, no "Encountered an error:" heading."""
    lines = (
        re.sub(r"^\d\d:\d\d:\d\d\s+", "", re.sub(r"\x1b\[[0-9;]*m", "", line)).strip() for line in output.splitlines()
    )
    return ": ".join(line for line in lines if line and line != "Encountered an error:") or "dbt printed no error"


def _parse_into(project_dir: Path, target: Path) -> None:
    """``dbt parse`` into a private folder, then move its manifest and partial-parse file into ``target``.

    A reader of target/manifest.json never sees a half-written file, and a killed parse leaves the old one whole.
    The previous partial-parse file is handed to dbt so an edit re-parses only what changed. dbt parses from a folder
    as a night's build runs (``dbt_in_warehouse_folder``), with the build's memory limit: the partial-parse file
    serves the first build on any warehouse of this file name.
    """
    with tempfile.TemporaryDirectory(dir=target, prefix=".parse-") as scratch:
        scratch_path = Path(scratch)
        if (target / PARTIAL_PARSE_FILE).exists():
            shutil.copyfile(target / PARTIAL_PARSE_FILE, scratch_path / PARTIAL_PARSE_FILE)
        warehouse = scratch_path / Path(os.environ.get(WAREHOUSE_VARIABLE) or _default_warehouse(project_dir)).name
        parsed = subprocess.run(
            [
                warehouse_folder_dbt_executable(),
                "parse",
                "--quiet",
                "--project-dir",
                str(project_dir),
                "--profiles-dir",
                str(project_dir),
                "--target-path",
                str(scratch_path),
            ],
            cwd=project_dir,
            env={**os.environ, WAREHOUSE_VARIABLE: str(warehouse), **dbt_environment()},
            capture_output=True,
            text=True,
        )
        if parsed.returncode != 0:
            raise ProjectDoesNotParse(
                f"the dbt project does not parse (dbt parse exited {parsed.returncode}), nothing ran: "
                + _dbt_error(parsed.stdout + "\n" + parsed.stderr)
            )
        os.replace(scratch_path / PARTIAL_PARSE_FILE, target / PARTIAL_PARSE_FILE)
        os.replace(scratch_path / "manifest.json", target / "manifest.json")


PREPARED_KEPT = 8
PREPARED_FILES = ("manifest.json", PARTIAL_PARSE_FILE)


def prepared_parse(fingerprint: str, project_dir: Path = DBT_PROJECT_DIR) -> Path:
    """The folder that keeps the parse of this fingerprint (its manifest and partial-parse file)."""
    return project_dir / "target" / "prepared" / fingerprint[:16]


def _copy_atomically(source: Path, destination: Path) -> None:
    """Copy ``source`` over ``destination`` as one replace, its permissions too (a temporary file is 0600)."""
    with _replaced_atomically(destination) as temporary:
        shutil.copy(source, temporary)


def _keep_parse(target: Path, fingerprint: str, project_dir: Path) -> None:
    """Keep target/'s fresh parse under its fingerprint; only the newest ``PREPARED_KEPT`` parses stay."""
    kept = prepared_parse(fingerprint, project_dir)
    kept.mkdir(parents=True, exist_ok=True)
    for name in PREPARED_FILES:
        _copy_atomically(target / name, kept / name)
    os.utime(kept)
    for old in sorted(kept.parent.iterdir(), key=_written_at, reverse=True)[PREPARED_KEPT:]:
        shutil.rmtree(old, ignore_errors=True)


def _restore_parse(target: Path, fingerprint: str, project_dir: Path) -> bool:
    """Put the kept parse of this fingerprint back into target/; False when there is none."""
    kept = prepared_parse(fingerprint, project_dir)
    if not all((kept / name).is_file() for name in PREPARED_FILES):
        return False
    for name in PREPARED_FILES:
        _copy_atomically(kept / name, target / name)
    os.utime(kept)  # the newest used: the last to be pruned
    return True


def prepare_manifest(project_dir: Path = DBT_PROJECT_DIR) -> Path:
    """target/manifest.json matching the project: the one there when its fingerprint is current, else the kept parse
    of the current fingerprint, else a new parse by dbt; returns its path."""
    manifest = manifest_path(project_dir)
    with _prepare_lock(manifest.parent):
        current = manifest_fingerprint(project_dir)
        stored = fingerprint_path(project_dir)
        if not manifest.exists() or not stored.exists() or stored.read_text(encoding="utf-8").strip() != current:
            if not _restore_parse(manifest.parent, current, project_dir):
                _parse_into(project_dir, manifest.parent)
                _keep_parse(manifest.parent, current, project_dir)
            with _replaced_atomically(stored) as temporary:
                temporary.write_text(current + "\n", encoding="utf-8")
    return manifest


# ``dbt build`` parses the project again, and dbt re-parses it whole (about 7 s, more under load) whenever the
# profile's connection differs from the one its partial-parse file was written with. The nightly build runs dbt from
# the warehouse's folder (``dbt_in_warehouse_folder``), so the first build on a warehouse starts from the kept
# parse of its file name (``prepared_parse``; target/'s own file when there is none) wherever the warehouse is, if the
# memory limit is the one that parse had. The partial-parse file a build
# leaves is also kept per warehouse, so the next night on the same warehouse (the nightly schedule, a launch from
# the UI, a re-run after a failure) re-parses only what changed whatever its name and limit. dbt itself checks that
# the file still matches the project, the dbt version and the profile.
PARTIAL_PARSE_STATES = 8


def partial_parse_state(warehouse: Path, project_dir: Path = DBT_PROJECT_DIR) -> Path:
    """Where the partial-parse file of builds on ``warehouse`` is kept (in dbt's target folder, keyed by path)."""
    key = hashlib.sha256(str(warehouse.resolve()).encode()).hexdigest()[:16]
    return project_dir / "target" / "partial_parse" / f"{key}.msgpack"


def seed_partial_parse(build_target: Path, warehouse: Path, project_dir: Path = DBT_PROJECT_DIR) -> None:
    """Hand a build on ``warehouse`` the partial-parse file of the last build on it, else the kept parse for its file
    name (target/'s own may by now be another name's: a night on another warehouse prepared it meanwhile)."""
    build_target.mkdir(parents=True, exist_ok=True)
    prepared = prepared_parse(manifest_fingerprint(project_dir, warehouse), project_dir) / PARTIAL_PARSE_FILE
    for state in (partial_parse_state(warehouse, project_dir), prepared):
        try:
            shutil.copyfile(state, build_target / PARTIAL_PARSE_FILE)
            return
        except FileNotFoundError:
            continue  # no build on this warehouse yet, or pruned
    # neither: dagster-dbt hands the build target/'s file


def keep_partial_parse(build_target: Path, warehouse: Path, project_dir: Path = DBT_PROJECT_DIR) -> None:
    """Keep the partial-parse file a build wrote, for the next build on ``warehouse``; only the newest few."""
    written = build_target / PARTIAL_PARSE_FILE
    if not written.exists():
        return
    state = partial_parse_state(warehouse, project_dir)
    state.parent.mkdir(parents=True, exist_ok=True)
    os.replace(written, state)
    kept = sorted(state.parent.glob("*.msgpack"), key=_written_at, reverse=True)
    for old in kept[PARTIAL_PARSE_STATES:]:
        old.unlink(missing_ok=True)


def _written_at(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:  # pruned by a build on another warehouse meanwhile
        return 0


# Every build writes a target folder of its own (compiled SQL, run results: about 25 MB for the demo). The newest
# few are kept for whoever wants to read a build's SQL; older ones go, but never one written in the last day: a
# build on another warehouse may still be running in it.
BUILD_FOLDERS_KEPT = 8
BUILD_FOLDER_MIN_AGE_SECONDS = 24 * 3600


def prune_build_folders(prefix: str, project_dir: Path = DBT_PROJECT_DIR, now: float | None = None) -> list[Path]:
    """Remove ``target/<prefix>-*`` build folders beyond the newest ``BUILD_FOLDERS_KEPT`` that are older than a day;
    returns the folders removed."""
    now = time.time() if now is None else now
    folders = sorted((project_dir / "target").glob(f"{prefix}-*"), key=_written_at, reverse=True)
    removed = []
    for folder in folders[BUILD_FOLDERS_KEPT:]:
        if folder.is_dir() and now - _written_at(folder) / 1e9 > BUILD_FOLDER_MIN_AGE_SECONDS:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
