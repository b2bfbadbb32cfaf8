"""The command line as an operator meets it, over two nights after the demo's on one warehouse with the default
Dagster home: quiet output (one line per asset, then each warning of the night), the previous night remembered
(quarantine_not_growing compares with it), a failed night that names its root cause last and prints no stale tables;
and the cheap refusals (empty landing folder, --version, --help)."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from cost_pipeline.cli import main, nightly_assets, run_log
from cost_pipeline.dagster_home import dagster_home
from cost_pipeline.fingerprint import table_fingerprints
from cost_pipeline.ingest.lib.warehouse import IngestReport
from tests.conftest import DemoRun
from tests.helpers import DEMO_CLOUD_JOB, append_demo_focus_lines, demo_focus_line

# Its module-scoped nights run once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("cli_nights")


@dataclass(frozen=True)
class Night:
    code: int
    out: str
    err: str


def _night(argv: list[str]) -> Night:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return Night(code, out.getvalue(), err.getvalue())


def _flagged_focus_lines(landing: Path) -> tuple[str, str]:
    """The demo's first FOCUS line (B-10's cloud job) tagged B-7, and an S3 line for the inventoried bucket ml-prod:
    night 1's two lines that warn-severity tests flag (test_a_failed_warning_test_is_printed_with_its_rows_and_...)."""
    tagged = demo_focus_line(landing, batch_tag="B-7")
    bucket = demo_focus_line(landing, "arn:aws:s3:::ml-prod", amount="41.00").replace(
        ",Compute,Amazon EKS,", ",Storage,Amazon S3,"
    )
    return tagged, bucket


# Night 1's tamper: the registry's last delivery made 10,000 hours old (test_a_source_not_delivered_on_time_is_a_
# warning_line_of_the_night).
LATE_REGISTRY = (
    "update ops.file_arrivals set first_seen_at = first_seen_at - interval 10000 hour where source = 'batch_registry'"
)


@pytest.fixture(scope="module")
def nights(demo_run: DemoRun, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Night, Night]:
    """Night 1, quiet, on a copy of the demo's night: the demo landing with two FOCUS lines that warn-severity tests
    flag (_flagged_focus_lines), the registry's last delivery made 10,000 hours old (LATE_REGISTRY); each scenario
    has its own warning lines and changes none of the others'. Night 2 (-v): two unreadable training-step lines
    arrive, and the batch registry's blocking check fails, so nothing downstream of it runs (no dbt: a short night)."""
    root = demo_run.copy_to(tmp_path_factory.mktemp("nights") / "demo")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    append_demo_focus_lines(landing, *_flagged_focus_lines(landing))
    with duckdb.connect(str(warehouse)) as con:
        con.execute(LATE_REGISTRY)
    argv = ["run", "--landing", str(landing), "--warehouse", str(warehouse)]
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("DAGSTER_HOME", raising=False)
        first = _night(argv)
        (landing / "steps" / "late.jsonl").write_text("not json\n[1]\n", encoding="utf-8")
        real = IngestReport.conserved
        patch.setattr(
            IngestReport,
            "conserved",
            property(lambda report: False if report.source == "batch_registry" else real.fget(report)),
        )
        second = _night([*argv, "-v"])
    return warehouse, first, second


def test_a_quiet_night_prints_one_line_per_asset_then_the_tables(nights):
    warehouse, first, _ = nights
    assert first.code == 0, first.err
    lines = first.out.splitlines()
    assert len(lines) < 250  # Dagster's and dbt's log (about 2,000 lines) went to the log file
    progress = {line.split()[0]: line.split()[1:] for line in lines if re.match(r"^[a-z]+/\S+ ", line)}
    assert progress["raw/scheduler_jobs"][1:4] == ["rows", "(+1", "quarantined)"]
    assert progress["marts/fct_batch_costs"][:2] == ["4", "rows"] and progress["marts/fct_batch_costs"][-1] == "s"
    assert progress["staging/stg_scheduler__sacct_jobs"][0] == "view"
    assert progress["published/marts"][1] == "tables"
    assert not [line for line in lines if " of 500 " in line or " - dagster - " in line]
    assert "Full cost per batch (marts.fct_batch_costs):" in first.out
    log = run_log(warehouse).read_text(encoding="utf-8")
    assert " - dagster - " in log  # Dagster's log (and dbt's, outside pytest's capture), for when it is needed


PHASE_LABEL_WARNING = (
    "warning: dbt test fct_runs_every_job_has_phase_label on marts/fct_runs returned 1 failing row "
    "(warn severity: the night goes on)"
)


def test_a_quiet_night_prints_each_failed_warning_test_after_the_assets(nights):
    """The demo's one job without a phase label fails the warn-severity test on fct_runs: a line says so, after the
    asset lines and before the tables, and the night still exits 0. (Night 1's FOCUS lines fail two more: every
    failed test's line is there; the list of them is test_a_failed_warning_test_is_printed_with_its_rows_and_...)"""
    _, first, _ = nights
    assert first.code == 0, first.err
    lines = first.out.splitlines()
    warned = [number for number, line in enumerate(lines) if line.startswith("warning: dbt test ")]
    assert lines.index(PHASE_LABEL_WARNING) in warned
    assert lines.index(next(line for line in lines if line.startswith("published/marts"))) < min(warned)
    assert max(warned) < lines.index("Compute bill per batch (marts.fct_batch_compute):")


def test_a_failed_warning_test_is_printed_with_its_rows_and_stored_table_and_the_night_exits_0(nights):
    """Night 1's two FOCUS lines that warn-severity tests flag, added to the demo export: B-10's cloud job tagged B-7
    (its tag disagrees with its job's batch: int_focus_charges_attributed_tags_name_the_job_s_batch, an
    accepted_values test returning one row, the value true) and an S3 line for the inventoried bucket ml-prod (billed
    and inventoried: one bucket-month, the rows kept in audit). Each is a warning line, after the demo's own; the
    night's exit code is not changed. (The late registry's line is its own test's.)"""
    warehouse, first, _ = nights
    tagged, bucket = _flagged_focus_lines(warehouse.parent / "landing")
    assert DEMO_CLOUD_JOB in tagged and "B-7" in tagged and ",Storage,Amazon S3," in bucket

    assert first.code == 0, first.err
    assert [
        line
        for line in first.out.splitlines()
        if line.startswith("warning:") and not line.startswith("warning: raw/batch_registry not delivered on time: ")
    ] == [
        PHASE_LABEL_WARNING,
        "warning: dbt test int_focus_charges_attributed_tags_name_the_job_s_batch on "
        "intermediate/int_focus_charges_attributed returned 1 failing row (warn severity: the night goes on)",
        "warning: dbt test storage_billed_and_inventoried on intermediate/int_storage_objects_costed returned "
        "1 failing row, stored in audit.storage_billed_and_inventoried (warn severity: the night goes on)",
    ]


def test_the_default_dagster_home_is_beside_the_warehouse_and_keeps_every_night(nights):
    warehouse, _, _ = nights
    home = dagster_home(warehouse)
    assert home == warehouse.with_name("warehouse.dagster")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs()
        assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 1
        assert not instance.telemetry_enabled  # nothing leaves the machine
        assert not instance.nux_enabled  # no first-visit dialog over the UI
    # Night 2's, night 1's and the demo's night's, newest first.
    assert [run.status for run in runs] == [
        dg.DagsterRunStatus.FAILURE,
        dg.DagsterRunStatus.SUCCESS,
        dg.DagsterRunStatus.SUCCESS,
    ]


def test_the_quarantine_check_sees_the_previous_cli_night(nights):
    """Night 1 (as the demo's night before it) quarantined no training step; night 2 quarantined two: the check
    compares with night 1."""
    _, first, second = nights
    assert "check quarantine_not_growing" not in first.out
    assert (
        "check quarantine_not_growing on raw/training_steps failed "
        "(rows_quarantined 2, previously_quarantined 0)" in second.out
    )


def test_a_failed_night_names_its_root_cause_last_and_prints_no_stale_tables(nights):
    _, first, second = nights
    assert second.code == 1
    last = second.err.strip().splitlines()[-1]
    assert last.startswith("cost-pipeline: the run failed: raw/batch_registry: "), last
    assert "rows_conserved" in last
    # The marts are night 1's: they are not printed, and the operator is told which night they are from.
    assert "Full cost per batch" not in second.out and "Compute bill per batch" not in second.out
    assert re.search(
        r"are from the night that ended \d{4}-\d\d-\d\d \d\d:\d\d UTC, the last that succeeded", second.out
    )
    # -v: Dagster's log on the terminal (night 1, quiet, had none of it).
    assert " - dagster - " in second.out + second.err
    assert "Full cost per batch" in first.out


def test_an_empty_landing_folder_is_refused_unless_allowed(tmp_path, capsys):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "scheduler").mkdir(parents=True)
    (landing / "scheduler" / ".keep").write_text("", encoding="utf-8")
    assert main(["run", "--landing", str(landing), "--warehouse", str(warehouse)]) == 7
    error = capsys.readouterr().err.strip()
    assert error == (
        f"cost-pipeline: landing folder {landing} holds no files: nothing to load; the warehouse is left as it is "
        "(--allow-empty runs anyway)"
    )
    assert not warehouse.exists() and not dagster_home(warehouse).exists()
    # --allow-empty goes past the refusal: here to the next check, a config file that does not exist.
    missing = tmp_path / "missing.yaml"
    argv = ["run", "--landing", str(landing), "--warehouse", str(warehouse), "--allow-empty", "--config", str(missing)]
    assert main(argv) == 2
    assert "missing.yaml" in capsys.readouterr().err


REQUESTS_AND_DOWNSTREAM = "key:raw/serving_requests+"


def test_run_select_runs_only_the_selected_assets_and_leaves_the_rest_as_they_were(demo_copy, monkeypatch):
    """``run --select``: a requests file changed since the demo's night, and only the requests' raw asset and what
    it feeds run: one line per selected asset, their figures rebuilt (one request fewer), every other mart as the
    demo's night built it, and the command's exit rules (0)."""
    landing, warehouse = demo_copy / "landing", demo_copy / "warehouse.duckdb"
    requests = landing / "requests" / "requests_2026-11.jsonl"
    requests.write_text("".join(requests.read_text(encoding="utf-8").splitlines(keepends=True)[:-1]), "utf-8")
    selected = nightly_assets(dg.AssetSelection.from_string(REQUESTS_AND_DOWNSTREAM))
    assert {"raw/serving_requests", "marts/fct_service_month", "published/marts"} <= selected.keys()
    assert "marts/fct_batch_costs" not in selected
    before = table_fingerprints(warehouse, "marts")
    for name in ("DAGSTER_HOME", "COST_LANDING_DIR", "COST_WAREHOUSE"):  # restored after the test
        monkeypatch.delenv(name, raising=False)

    night = _night(
        ["run", "--landing", str(landing), "--warehouse", str(warehouse), "--select", REQUESTS_AND_DOWNSTREAM]
    )

    assert night.code == 0, night.err
    assert f"cost-pipeline: --select: {len(selected)} of the nightly job's assets;" in night.out
    printed = {line.split()[0] for line in night.out.splitlines() if re.match(r"^[a-z]+/\S+ ", line)}
    assert printed == selected.keys()
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("select count(*) from raw.serving_requests").fetchall() == [(759,)]
        assert con.execute("select sum(requests_completed) from marts.fct_service_month").fetchall() == [(679,)]
    after = table_fingerprints(warehouse, "marts")
    rebuilt = {f"marts/{table}" for table in before if after[table] != before[table]}
    assert rebuilt and rebuilt <= selected.keys()
    assert after["fct_batch_costs"] == before["fct_batch_costs"]


@pytest.mark.parametrize(
    ("selection", "said"),
    [("key:raw/serving_requests and", "is not a Dagster asset selection"), ("key:raw/nope", "selects none")],
)
def test_a_selection_of_no_asset_is_refused_in_one_line(tmp_path, capsys, monkeypatch, selection, said):
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    (landing / "scheduler").mkdir(parents=True)
    (landing / "scheduler" / "sacct.txt").write_text("x\n", encoding="utf-8")
    for name in ("COST_LANDING_DIR", "COST_WAREHOUSE"):
        monkeypatch.delenv(name, raising=False)
    assert main(["run", "--landing", str(landing), "--warehouse", str(warehouse), "--select", selection]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and said in error and repr(selection) in error, error
    assert not warehouse.exists() and not dagster_home(warehouse).exists()


def test_version_and_help_are_plain_text(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert re.fullmatch(r"cost-pipeline \d+\.\d+\.\d+\n", capsys.readouterr().out)
    from cost_pipeline.cli import _parser

    (subcommands,) = [action for action in _parser()._actions if isinstance(action, argparse._SubParsersAction)]
    assert {"run", "demo", "docs", "report", "journal", "close", "export", "monthly", "retract"} <= set(
        subcommands.choices
    )
    texts = {}
    for command in ("", *subcommands.choices):
        with pytest.raises(SystemExit):
            main([command, "--help"] if command else ["--help"])
        texts[command] = capsys.readouterr().out
    for text in texts.values():
        assert text.startswith("usage: cost-pipeline")
        assert "`" not in text and "**" not in text, text  # no Markdown or reStructuredText markup
    assert "7 the landing folder holds no files" in " ".join(texts[""].split())
    assert "8 a source's load failed" in " ".join(texts[""].split())
    assert "--allow-empty" in texts["run"] and "-v, --verbose" in texts["run"] and "-v, --verbose" in texts["demo"]


def test_a_dbt_failure_names_the_model_and_its_file():
    """dagster-dbt's error carries dbt's own error lines; the root cause is the node, its file and dbt's reason."""
    from dagster._utils.error import SerializableErrorInfo

    from cost_pipeline.progress import root_cause

    dbt = SerializableErrorInfo(
        "dagster_dbt.errors.DagsterDbtCliRuntimeError: The dbt CLI process with command\n\n`dbt build`\n\nfailed "
        "with exit code `1`.\n\nErrors parsed from dbt logs:\n\n  Database Error in model fct_batch_costs "
        "(models/marts/finance/fct_batch_costs.sql)\n  Conversion Error: Could not convert string 'x' to INT32\n",
        [],
        "DagsterDbtCliRuntimeError",
    )
    step = SerializableErrorInfo('Error occurred while executing op "cost_models":', [], "Error", cause=dbt)
    assert root_cause("cost_models", step) == (
        "dbt model fct_batch_costs (models/marts/finance/fct_batch_costs.sql): "
        "Conversion Error: Could not convert string 'x' to INT32"
    )


def test_a_source_not_delivered_on_time_is_a_warning_line_of_the_night(nights):
    """Before night 1, the registry's last delivery is made 10,000 hours old (LATE_REGISTRY; its contract allows far
    less): the night goes on with what it has (exit 0) and says so in its output, not only in Dagster's check."""
    _, first, _ = nights
    assert first.code == 0, first.err
    (line,) = [line for line in first.out.splitlines() if "not delivered on time" in line]
    assert line.startswith("warning: raw/batch_registry not delivered on time: batch_registry last delivered ")
    assert "more than the" in line and line.endswith("(the night goes on on what it has)")
