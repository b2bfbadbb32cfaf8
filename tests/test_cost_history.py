"""Cost snapshots are insert-only (R16): a late file adds a new version for the batch it touches, earlier
versions stay byte-identical, and a re-run with nothing new adds nothing."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.cli import nightly_assets, run_pipeline
from tests.helpers import assert_covers, nightly_assets_downstream_of

# The two late files share one night (a module-scoped fixture): the module's tests run on one worker.
pytestmark = pytest.mark.xdist_group("cost_history")


# The late files' raw assets: B-7's late step (the training steps) and B-10's restated bill (the FOCUS export).
STEPS, BILL = ("raw", "training_steps"), ("raw", "billing_focus")


def _night_after(landing: Path, warehouse: Path, changed: list[tuple[str, ...]]) -> bool:
    """The night after the demo's on a copy of it whose ``changed`` sources' files changed: their raw assets and
    every asset of the nightly job downstream of them (every model they feed, the history snapshots, which read the
    batch figures, the history mart and publishing); the rest reads nothing the change touches and stays as the
    demo's night built it."""
    keys = nightly_assets_downstream_of(
        changed, covering=("history/snp_batch_costs", "history/snp_step_costs", "marts/fct_batch_cost_history")
    )
    return run_pipeline(landing, warehouse, asset_keys=list(keys.values()))


def _snapshots_lineage() -> list[list[str]]:
    """The nightly job's assets the history snapshots read, directly or not (from every raw source they come from),
    the snapshots themselves and every asset downstream of them: a re-run of all that makes the history."""
    import dagster as dg

    history = dg.AssetSelection.key_prefixes("history")
    keys = nightly_assets(history.upstream() | history.downstream())
    assert_covers(keys, ("raw/training_steps", "published/marts"), "the history snapshots' lineage")
    return list(keys.values())


def _snapshots(warehouse) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute("select * from history.snp_batch_costs order by batch_id, snapshot_version").fetchall()
    finally:
        con.close()


def _step_snapshots(warehouse) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(
            "select * from history.snp_step_costs order by batch_id, job_id, step_number, started_at, snapshot_version"
        ).fetchall()
    finally:
        con.close()


def _deliver_late_step(landing) -> None:
    """A late step record for B-7's retry job (1003, step 31, ten minutes) arrives the next night."""
    late = {
        "batch_id": "B-7",
        "job_id": "1003",
        "step": 31,
        "started_at": "2026-11-03T11:40:00",
        "ended_at": "2026-11-03T11:50:00",
        "committed": True,
        "discarded_reason": None,
        "samples": 512,
        "tokens": 1_000_000,
        "config_version": "rl-cfg-12",
        "data_version": "prefs-2026-10",
    }
    (landing / "steps" / "steps_late.jsonl").write_text(json.dumps(late) + "\n", encoding="utf-8")


def _restate_the_cloud_job(landing) -> None:
    """The provider restates B-10's cloud job (ChargeClass = Correction, 102.40 -> -9.60 of it) in a later export."""
    export = (landing / "billing" / "aws_focus_2026-11.csv").read_text(encoding="utf-8").splitlines()
    header, job_line = export[0], next(line for line in export if "8 x H100 for 4 h" in line)
    restated = (
        job_line.replace("8 x H100 for 4 h", "Restated: reserved-instance rate applied")
        .replace(",Usage,,", ",Usage,Correction,")
        .replace("171.37", "-16.00")
        .replace("102.40", "-9.60")
    )
    assert restated.count("-9.60") == 2 and ",Correction," in restated
    (landing / "billing" / "aws_focus_2026-12-restated.csv").write_text(f"{header}\n{restated}\n", encoding="utf-8")


@dataclass(frozen=True)
class LateNight:
    """The night after the demo on a copy of it, with two independent late files: B-7's late step and B-10's restated
    bill (each test below asserts its own batch; the other batches show neither). ``first``: the demo's snapshots."""

    root: Path
    first: list[tuple]
    first_steps: list[tuple]

    @property
    def landing(self) -> Path:
        return self.root / "landing"

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse.duckdb"


@pytest.fixture(scope="module")
def late_night(demo_run, tmp_path_factory: pytest.TempPathFactory) -> LateNight:
    assert demo_run.succeeded
    root = tmp_path_factory.mktemp("late")
    shutil.copytree(demo_run.landing, root / "landing")
    shutil.copyfile(demo_run.warehouse, root / "warehouse.duckdb")
    shutil.copytree(demo_run.warehouse.with_name("warehouse.dagster"), root / "warehouse.dagster")
    night = LateNight(root, _snapshots(root / "warehouse.duckdb"), _step_snapshots(root / "warehouse.duckdb"))
    _deliver_late_step(night.landing)
    _restate_the_cloud_job(night.landing)
    assert _night_after(night.landing, night.warehouse, [STEPS, BILL])
    return night


def test_a_late_file_adds_a_version_and_history_is_never_rewritten(demo_run, late_night, tmp_path):
    first, first_steps = late_night.first, late_night.first_steps
    assert [(r[0], r[1]) for r in first] == [("B-10", 1), ("B-7", 1), ("B-8", 1), ("unattributed", 1)]
    assert len(first_steps) == 13 + 20 + 30  # jobs 1002, 1003 and 2003, one version each
    # A step's cost is its job's cost per allocated second x its seconds: 1002 cost 158.56 over 4 h, steps of 600 s.
    step_one = demo_run.row("select step_cost from history.snp_step_costs where job_id = '1002' and step_number = 1")
    assert step_one["step_cost"] == Decimal("6.6067")  # 158.56 x 600 / 14,400

    # B-10's restated bill is the other test's (its version 2); every other batch but B-7 keeps its one version.
    second = _snapshots(late_night.warehouse)
    assert [(r[0], r[1]) for r in second if r[0] != "B-10"] == [("B-7", 1), ("B-7", 2), ("B-8", 1), ("unattributed", 1)]
    assert [r for r in second if r[1] == 1] == first  # earlier versions byte-identical
    # Per step (R16): the late step is appended, every other step's version stays as it was.
    second_steps = _step_snapshots(late_night.warehouse)
    assert [r for r in second_steps if r not in first_steps] == [
        r for r in second_steps if r[1] == "1003" and r[2] == 31
    ]
    assert set(first_steps) <= set(second_steps) and len(second_steps) == len(first_steps) + 1

    con = duckdb.connect(str(late_night.warehouse), read_only=True)
    history = con.execute(
        "select batch_id, snapshot_version, is_latest, changed_columns, steps_run, compute_cost "
        "from marts.fct_batch_cost_history where batch_id = 'B-7' order by 2"
    ).fetchall()
    con.close()
    assert history[0][:4] == ("B-7", 1, False, "first snapshot") and history[0][4] == 33
    assert history[1][:3] == ("B-7", 2, True) and history[1][4] == 34
    assert history[1][3] == "steps_run, steps_counted, cost_per_counted_step"
    assert history[1][5] == history[0][5]  # the same compute spent over one more step

    # The night after, on a copy: nothing new, nothing appended. Every source the history comes from is loaded again
    # and every model it reads rebuilt, then the snapshots run (the assets that feed neither stay as they were).
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    shutil.copytree(late_night.landing, landing)
    shutil.copyfile(late_night.warehouse, warehouse)
    shutil.copytree(late_night.warehouse.with_name("warehouse.dagster"), tmp_path / "warehouse.dagster")
    assert run_pipeline(landing, warehouse, asset_keys=_snapshots_lineage())
    assert _snapshots(warehouse) == second
    assert _step_snapshots(warehouse) == second_steps


def test_a_restated_bill_adds_a_version_and_the_estimate_stays_in_history(late_night):
    """The provider restates B-10's cloud job (ChargeClass = Correction) in a later export: B-10 gets a second
    version with the corrected cost; its first version, and every other batch but B-7 (the other test's late step),
    is untouched."""
    first = late_night.first
    second = _snapshots(late_night.warehouse)
    assert [(r[0], r[1]) for r in second if r[0] != "B-7"] == [
        ("B-10", 1),
        ("B-10", 2),
        ("B-8", 1),
        ("unattributed", 1),
    ]
    assert [r for r in second if r[1] == 1] == first  # the estimate's version is byte-identical
    con = duckdb.connect(str(late_night.warehouse), read_only=True)
    history = con.execute(
        "select snapshot_version, is_latest, changed_columns, compute_cost, cloud_compute_cost, "
        "total_cost from marts.fct_batch_cost_history where batch_id = 'B-10' order by 1"
    ).fetchall()
    lines = con.execute(
        "select count(*), sum(amount) from marts.fct_cost_lines where batch_id = 'B-10' and has_correction"
    ).fetchone()
    con.close()
    assert history[0] == (1, False, "first snapshot", Decimal("96.00"), Decimal("96.00"), Decimal("108.00"))
    assert history[1][:2] == (2, True)
    assert history[1][3:] == (Decimal("86.40"), Decimal("86.40"), Decimal("98.40"))  # 96.00 - 9.60
    assert history[1][2] == "compute_cost, total_cost, total_cost_low, total_cost_high, cloud_compute_cost"
    assert lines == (1, Decimal("86.40"))  # the job's line, restatements included


def test_a_history_written_before_the_unpriced_columns_gets_them_without_a_new_version(demo_run, tmp_path):
    """is_unpriced and unpriced_gpu_hours were added to the snapshot after versions were written: the next run
    appends the columns (null in the old versions), hashes them only when they differ from false and 0, so it
    writes no new version, and the history mart does not count the null-to-false step as a change. The same night
    brings B-7's late step: B-7 alone gets a version, written with the new columns, and the others none."""
    landing = tmp_path / "landing"
    shutil.copytree(demo_run.landing, landing)
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copyfile(demo_run.warehouse, warehouse)
    con = duckdb.connect(str(warehouse))
    for column in ("is_unpriced", "unpriced_gpu_hours"):
        con.execute(f"alter table history.snp_batch_costs drop column {column}")
    before = con.execute("select * from history.snp_batch_costs order by batch_id, snapshot_version").fetchall()
    con.close()

    _deliver_late_step(landing)  # B-7 alone gets a version: the other batches show the appended columns' effect
    assert _night_after(landing, warehouse, [STEPS])
    after = _snapshots(warehouse)
    assert [(r[0], r[1]) for r in after] == [("B-10", 1), ("B-7", 1), ("B-7", 2), ("B-8", 1), ("unattributed", 1)]
    assert [r[:-2] for r in after if r[1] == 1] == before  # no new version but B-7's, old ones byte-identical
    assert {r[-2:] for r in after if r[1] == 1} == {(None, None)}  # appended columns, null in versions written before

    con = duckdb.connect(str(warehouse), read_only=True)
    latest = con.execute(
        "select snapshot_version, is_unpriced, unpriced_gpu_hours, changed_columns "
        "from marts.fct_batch_cost_history where batch_id = 'B-7' and is_latest"
    ).fetchall()
    con.close()
    assert latest == [(2, False, Decimal("0.0000"), "steps_run, steps_counted, cost_per_counted_step")]
