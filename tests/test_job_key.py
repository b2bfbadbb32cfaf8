"""JobIDs are reused after a controller reset and across clusters (issue 14, I1). Two jobs with the same JobID and
different submit times, or on different clusters, are two jobs with two job keys (cluster/JobID@submit), both
costed, and a step record naming the reused id belongs to the job that held the id when the step ran."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from cost_pipeline.cli import run_pipeline
from cost_pipeline.demo import write_demo_landing
from tests.conftest import DemoRun

# Its module-scoped nights run once: the whole module goes to one worker.
pytestmark = pytest.mark.xdist_group("job_key")


def _sacct_line(header: list[str], **values: str) -> str:
    return "|".join(values.get(field, "") for field in header)


@pytest.fixture(scope="module")
def reused_night(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """The demo plus job 1002 again: after a controller reset (no cluster named) and on cluster beta."""
    root = tmp_path_factory.mktemp("job_key")
    landing = write_demo_landing(root / "landing")
    demo_header = (landing / "scheduler" / "sacct_2026-11.txt").read_text(encoding="utf-8").splitlines()[0]
    header = demo_header.split("|")
    assert "Cluster" not in header and "1002|" in (landing / "scheduler" / "sacct_2026-11.txt").read_text()
    common = {
        "JobName": "b7-train",
        "Account": "post-training",
        "Partition": "gpu",
        "User": "trainer",
        "State": "COMPLETED",
        "ExitCode": "0:0",
        "Restarts": "0",
        "Timelimit": "04:00:00",
        "NNodes": "1",
        "NodeList": "gpu-a",
        "ReqTRES": "cpu=64,gres/gpu=8,node=1",
        "AllocTRES": "cpu=64,gres/gpu=8,node=1",
        "Comment": "batch=B-7;phase=training;reason=planned_experiment",
    }
    # The controller was reset: JobID 1002 again, submitted on 20 November, 8 GPUs for 2 hours.
    reset = _sacct_line(
        header,
        **common,
        JobID="1002",
        JobIDRaw="1002",
        Submit="2026-11-20T09:55:00",
        Start="2026-11-20T10:00:00",
        End="2026-11-20T12:00:00",
        Elapsed="02:00:00",
    )
    (landing / "scheduler" / "sacct_after_reset.txt").write_text(f"{demo_header}\n{reset}\n", encoding="utf-8")
    # Cluster beta's own JobID 1002, its export naming the cluster: 8 GPUs for 1 hour on 25 November.
    beta_header = [*header, "Cluster"]
    beta = _sacct_line(
        beta_header,
        **common,
        JobID="1002",
        JobIDRaw="1002",
        Submit="2026-11-25T07:55:00",
        Start="2026-11-25T08:00:00",
        End="2026-11-25T09:00:00",
        Elapsed="01:00:00",
        Cluster="beta",
    )
    (landing / "scheduler" / "sacct_beta.txt").write_text(f"{'|'.join(beta_header)}\n{beta}\n", encoding="utf-8")
    # One step record naming 1002 while the reset's job ran: it is that job's step, not the November 3 job's.
    step = {
        "batch_id": "B-7",
        "job_id": "1002",
        "step": 1,
        "started_at": "2026-11-20T10:30:00",
        "ended_at": "2026-11-20T10:40:00",
        "committed": True,
        "discarded_reason": None,
        "samples": 512,
        "tokens": 1000000,
        "config_version": "rl-cfg-12",
        "data_version": "prefs-2026-10",
    }
    (landing / "steps" / "steps_after_reset.jsonl").write_text(json.dumps(step) + "\n", encoding="utf-8")
    warehouse = root / "warehouse.duckdb"
    return DemoRun(landing, warehouse, run_pipeline(landing, warehouse))


def test_a_reused_jobid_is_two_jobs_each_costed_and_the_night_stays_green(reused_night):
    assert reused_night.succeeded
    runs = reused_night.query(
        "select job_key, cluster, job_id, batch_id, phase, occupied_gpu_hours, compute_cost, has_unpriced_month "
        "from marts.fct_runs where job_id = '1002' order by start_at"
    )
    # Hand-checked: November's capacity cost is 28,540.82 over 11,520 available GPU-hours; each job takes its
    # largest-remainder share by GPU-seconds: 64 h -> 2,854,082 x 64 / 11,520 = 15,856.01 cents = 158.56;
    # 16 h -> 3,964.00 cents = 39.64; 8 h -> 1,982.00 cents = 19.82. The demo's own 1002 keeps its cost.
    assert runs == [
        ("/1002@2026-11-02 23:55:00", None, "1002", "B-7", "training", Decimal("64.0000"), Decimal("158.56"), False),
        ("/1002@2026-11-20 09:55:00", None, "1002", "B-7", "training", Decimal("16.0000"), Decimal("39.64"), False),
        (
            "beta/1002@2026-11-25 07:55:00",
            "beta",
            "1002",
            "B-7",
            "training",
            Decimal("8.0000"),
            Decimal("19.82"),
            False,
        ),
    ]
    # Each is a cost line of its own in the resource book, shown by its JobID.
    book = reused_night.query(
        "select job_key, resource_key, resource_cost from marts.fct_resource_book where job_id = '1002' order by 1"
    )
    assert [(key, resource, cost) for key, resource, cost in book] == [
        ("/1002@2026-11-02 23:55:00", "1002", Decimal("158.56")),
        ("/1002@2026-11-20 09:55:00", "1002", Decimal("39.64")),
        ("beta/1002@2026-11-25 07:55:00", "1002", Decimal("19.82")),
    ]


def test_a_step_naming_a_reused_jobid_belongs_to_the_job_running_then(reused_night):
    steps = dict(
        reused_night.query(
            "select job_key, steps_run from intermediate.int_job_steps_aggregated where job_key like '%/1002@%'"
        )
    )
    demo_steps = reused_night.query("select count(*) from staging.stg_steps__training_steps where job_id = '1002'")[0][
        0
    ]
    assert steps == {"/1002@2026-11-02 23:55:00": demo_steps - 1, "/1002@2026-11-20 09:55:00": 1}


# Job 2003 of the demo (16 GPUs for 8 hours), as exports with other field lists write it.
_SACCT_2003 = {
    "JobID": "2003",
    "JobIDRaw": "2003",
    "State": "COMPLETED",
    "Submit": "2026-11-05T23:55:00",
    "Start": "2026-11-06T00:00:00",
    "End": "2026-11-06T08:00:00",
    "Elapsed": "08:00:00",
    "Timelimit": "2-00:00:00",
    "NNodes": "2",
    "ReqTRES": "cpu=64,gres/gpu=16,node=2",
    "AllocTRES": "cpu=64,gres/gpu=16,node=2",
    "Comment": "batch=B-8;phase=training;reason=planned_experiment",
}
_RUNNING_2003 = {**_SACCT_2003, "State": "RUNNING", "End": "Unknown", "Elapsed": "04:00:00"}
_BASE = ["JobID", "JobIDRaw", "State", "Submit", "Start", "End", "Elapsed", "Timelimit", "NNodes"]
_BASE += ["ReqTRES", "AllocTRES", "Comment"]


def _sacct_file(header: list[str], *records: dict[str, str]) -> list[str]:
    return ["|".join(header), *(_sacct_line(header, **record) for record in records)]


def _allocations(tmp_path, files: dict[str, list[str]]) -> list[tuple]:
    from tests.helpers import staged_rows

    rows = staged_rows(tmp_path, "scheduler_jobs", files, "stg_scheduler__sacct_jobs")
    return sorted(
        (row["job_key"], row["state"], row["source_file"].rsplit("/", 1)[-1])
        for row in rows
        if row["record_type"] == "allocation"
    )


def _could_be_two_jobs(tmp_path) -> list[tuple]:
    """The records the night's warning ``sacct_records_name_one_job`` lists on the warehouse ``_allocations`` loaded
    (the staging view built, then its tests): key, file, line and the jobs each could be. A warning: the build
    passes."""
    from tests.helpers import dbt_test, query

    warehouse = tmp_path / "warehouse.duckdb"
    # The tests reading only the staged records (others read the contract's tables, not built here).
    code, out, results = dbt_test(
        tmp_path, warehouse, "stg_scheduler__sacct_jobs", "build", "--indirect-selection", "cautious"
    )
    assert code == 0, out
    (warning,) = (r for r in results if r["unique_id"] == "test.cost_pipeline.sacct_records_name_one_job")
    rows = query(
        warehouse,
        "select job_key, source_file, source_line, jobs_it_could_be, first_job_it_could_be, last_job_it_could_be"
        " from audit.sacct_records_name_one_job order by all",
    )
    assert (warning["status"], warning["failures"]) == ("warn" if rows else "pass", len(rows))
    return [(key, file.rsplit("/", 1)[-1], *rest) for key, file, *rest in rows]


def test_an_export_naming_the_cluster_or_leaving_out_submit_repeats_the_same_job(tmp_path):
    """The demo's export names no Cluster. Delivered again with the Cluster field, job 2003 was keyed both
    `/2003@…` and `gpu-cluster/2003@…` (B-8's compute cost 426.13 -> 743.25, 128 GPU-hours twice); an export
    without Submit keyed it `/2003@` beside `/2003@2026-11-05 23:55:00` (the same doubling); and a running record
    in one and its ended one in the other were both read (the running one never retired). A record without the
    cluster is the job of the one cluster naming its JobID at that submit, one without Submit the one job known for
    its JobID: one job, its ended record read."""
    no_submit = [field for field in _BASE if field != "Submit"]
    files = {
        "scheduler/a.txt": _sacct_file(_BASE, _RUNNING_2003),
        "scheduler/b.txt": _sacct_file([*_BASE, "Cluster"], {**_SACCT_2003, "Cluster": "gpu-cluster"}),
        "scheduler/c.txt": _sacct_file(no_submit, _SACCT_2003),
    }
    # Files of one load: of the ended records, the last by path (c.txt), keyed with the cluster b.txt names.
    assert _allocations(tmp_path, files) == [("gpu-cluster/2003@2026-11-05 23:55:00", "COMPLETED", "c.txt")]


def test_an_export_without_submit_alone_repeats_the_job_of_the_one_submit(tmp_path):
    no_submit = [field for field in _BASE if field != "Submit"]
    files = {
        "scheduler/a.txt": _sacct_file(_BASE, _RUNNING_2003),
        "scheduler/c.txt": _sacct_file(no_submit, _SACCT_2003),
    }
    assert _allocations(tmp_path, files) == [("/2003@2026-11-05 23:55:00", "COMPLETED", "c.txt")]


def test_jobs_of_two_clusters_or_two_submits_stay_two_and_an_ambiguous_record_stays_apart(tmp_path):
    """JobID 2003 on two named clusters, and again after a reset (another submit): three jobs. A record naming
    neither cluster nor submit could be any of them and stays its own; one naming no cluster at a submit two
    clusters share stays its own too."""
    reset = {**_SACCT_2003, "Submit": "2026-11-20T09:55:00", "Start": "2026-11-20T10:00:00"}
    reset["End"] = "2026-11-20T18:00:00"
    no_submit = [field for field in _BASE if field != "Submit"]
    files = {
        "scheduler/a.txt": _sacct_file(
            [*_BASE, "Cluster"],
            {**_SACCT_2003, "Cluster": "alpha"},
            {**_SACCT_2003, "Cluster": "beta"},
            {**reset, "Cluster": "alpha"},
        ),
        "scheduler/b.txt": _sacct_file(_BASE, _SACCT_2003),
        "scheduler/c.txt": _sacct_file(no_submit, _SACCT_2003),
    }
    assert _allocations(tmp_path, files) == [
        ("/2003@", "COMPLETED", "c.txt"),
        ("/2003@2026-11-05 23:55:00", "COMPLETED", "b.txt"),
        ("alpha/2003@2026-11-05 23:55:00", "COMPLETED", "a.txt"),
        ("alpha/2003@2026-11-20 09:55:00", "COMPLETED", "a.txt"),
        ("beta/2003@2026-11-05 23:55:00", "COMPLETED", "a.txt"),
    ]
    # The two records that stay apart could each be a job counted again: the night warns, naming them (c.txt's could
    # be any of the four others). Jobs of two clusters or two submits (a.txt) are not named.
    assert _could_be_two_jobs(tmp_path) == [
        ("/2003@", "c.txt", 2, 4, "/2003@2026-11-05 23:55:00", "beta/2003@2026-11-05 23:55:00"),
        ("/2003@2026-11-05 23:55:00", "b.txt", 2, 2, "alpha/2003@2026-11-05 23:55:00", "beta/2003@2026-11-05 23:55:00"),
    ]


def test_an_export_without_cluster_and_one_without_submit_repeat_the_same_job(tmp_path):
    """The demo's export (Submit, no Cluster) delivered again with Cluster but without Submit keyed job 2003 both
    `/2003@2026-11-05 23:55:00` and `gpu-cluster/2003@` (B-8's compute cost 426.13 -> 743.25, exit 0): neither
    record named what the other lacked. When a JobID's records know one Submit and name one cluster, they are one
    job. JobID 2004, named by two clusters, could be either's: its records stay apart."""
    no_submit = [field for field in _BASE if field != "Submit"]
    other = {**_SACCT_2003, "JobID": "2004", "JobIDRaw": "2004"}
    files = {
        "scheduler/a.txt": _sacct_file(_BASE, _RUNNING_2003, other),
        "scheduler/b.txt": _sacct_file(
            [*no_submit, "Cluster"],
            {**_SACCT_2003, "Cluster": "gpu-cluster"},
            {**other, "Cluster": "alpha"},
            {**other, "Cluster": "beta"},
        ),
    }
    assert _allocations(tmp_path, files) == [
        ("/2004@2026-11-05 23:55:00", "COMPLETED", "a.txt"),
        ("alpha/2004@", "COMPLETED", "b.txt"),
        ("beta/2004@", "COMPLETED", "b.txt"),
        ("gpu-cluster/2003@2026-11-05 23:55:00", "COMPLETED", "b.txt"),
    ]
    # JobID 2004's three records are each perhaps another's job: each is named; job 2003, resolved, is not.
    assert _could_be_two_jobs(tmp_path) == [
        ("/2004@2026-11-05 23:55:00", "a.txt", 3, 2, "alpha/2004@", "beta/2004@"),
        ("alpha/2004@", "b.txt", 3, 1, "/2004@2026-11-05 23:55:00", "/2004@2026-11-05 23:55:00"),
        ("beta/2004@", "b.txt", 4, 1, "/2004@2026-11-05 23:55:00", "/2004@2026-11-05 23:55:00"),
    ]
