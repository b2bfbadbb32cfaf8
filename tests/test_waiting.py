"""Waiting is not one number (R10): the demo's waiting figures, computed by hand, each kept in its own column.

The scenario (cost_pipeline/demo.py): every job is submitted 5 minutes before it starts; steps start 10 minutes
after the job starts and run back to back; job 1002 (16 GPUs, 00:00-04:00 on 3 November) fails with NODE_FAIL and
gpu-b's 8 GPUs go idle from minute 180; job 1003 (16 GPUs, 06:00-12:00) restarts it.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import duckdb

from cost_pipeline.cli import run_pipeline
from tests.helpers import one_batch_landing, query
from tests.test_end_to_end import NOVEMBER_HOURS, hours, job_cost

WAITING = ("queued", "setup", "data_and_sync_wait", "hang_after_fault", "tail", "preemption_recovery")


def share(cost: Decimal, gpu_minutes: int, occupied_gpu_hours: int) -> Decimal:
    """An allocated interval costs the job's own compute cost x interval / occupied, rounded once per job."""
    return (cost * gpu_minutes / (occupied_gpu_hours * 60)).quantize(Decimal("0.01"), ROUND_HALF_UP)


def _waiting(demo_run, batch_id: str, phase: str) -> dict:
    return demo_run.row("select * from marts.fct_batch_waiting where batch_id = ? and phase = ?", [batch_id, phase])


def test_queued_is_submit_to_start_times_requested_gpus(demo_run):
    # B-7: 1001 (exploration), 1004 (validation), 1005 (analysis) on 8 GPUs, 1002 and 1003 (training) on 16;
    # each waited 5 minutes in the queue.
    rows = demo_run.query("select phase, queued_gpu_hours from marts.fct_batch_waiting where batch_id = 'B-7'")
    assert dict(rows) == {
        "exploration": hours(8 * 5),
        "training": hours(32 * 5),
        "validation": hours(8 * 5),
        "analysis": hours(8 * 5),
    }
    # B-8 exploration: 2001, 2002_1, 2002_2 started (8 GPUs each); the pending array 2002_[3-4] is counted apart:
    # two jobs (2002_3 and 2002_4, each its own JobID to Slurm), neither started, so 3 + 2 = 5 jobs, 2 not started.
    b8 = _waiting(demo_run, "B-8", "exploration")
    assert (b8["queued_gpu_hours"], b8["jobs"], b8["jobs_not_started"]) == (hours(3 * 8 * 5), 3 + 2, 2)


def test_b7_training_every_waiting_figure_by_hand(demo_run):
    row = _waiting(demo_run, "B-7", "training")
    cost_1002, cost_1003 = job_cost(64), job_cost(96)
    # 1002 ran steps 1-13 (12 x 600 s + 720 s = 132 min) from 00:10 to 02:22, released at 04:00;
    # 1003 ran steps 11-30 (19 x 600 s + 900 s = 205 min) from 06:10 to 09:35, released at 12:00.
    setup = {"1002": 16 * 10, "1003": 16 * 10}
    tail = {"1002": 16 * (240 - 142), "1003": 16 * (360 - 215)}
    comm = {"1002": 8 * 23 + 8 * 17, "1003": 15 * 35 + 29}  # the comm_wait tier (see test_end_to_end)
    hang_1002 = 8 * 60  # gpu-b idle from minute 180 to 240; gpu-a keeps computing after the last step
    recovery_1003 = 16 * 130  # 1002 ended 04:00, 1003's first step started 06:10
    recovery_allocated_1003 = 16 * 10
    expected = {
        "jobs": 2,
        "jobs_not_started": 0,
        "jobs_with_steps": 2,
        "queued_gpu_hours": hours(32 * 5),
        "setup_gpu_hours": hours(sum(setup.values())),
        "setup_cost": share(cost_1002, setup["1002"], 64) + share(cost_1003, setup["1003"], 96),
        "data_and_sync_wait_gpu_hours": hours(sum(comm.values())),
        "data_and_sync_wait_cost": share(cost_1002, comm["1002"], 64) + share(cost_1003, comm["1003"], 96),
        "hang_after_fault_gpu_hours": hours(hang_1002),
        "hang_after_fault_cost": share(cost_1002, hang_1002, 64),
        "tail_gpu_hours": hours(sum(tail.values())),
        "tail_cost": share(cost_1002, tail["1002"], 64) + share(cost_1003, tail["1003"], 96),
        "preemption_recovery_gpu_hours": hours(recovery_1003),
        "preemption_recovery_cost": share(cost_1003, recovery_allocated_1003, 96),
    }
    assert {k: row[k] for k in expected} == expected
    assert row["setup_gpu_hours"] == Decimal("5.3333") and row["tail_gpu_hours"] == Decimal("64.8000")
    assert row["preemption_recovery_gpu_hours"] == Decimal("34.6667")


def test_job_level_figures_and_what_stays_null(demo_run):
    jobs = {
        r[0]: r[1:]
        for r in demo_run.query("""
        select job_id, setup_gpu_seconds, tail_gpu_seconds, hang_after_fault_gpu_seconds,
               preemption_recovery_gpu_seconds, recovery_ends_at_first_step
        from intermediate.int_job_waiting_measured""")
    }
    assert jobs["1002"] == (16 * 600, 16 * 98 * 60, 8 * 3600, None, None)
    assert jobs["1003"] == (16 * 600, 16 * 145 * 60, None, 16 * 130 * 60, True)
    # 2003 (B-8 training, 16 GPUs): steps 1-30, 29 x 480 s + 1,500 s = 257 min from 00:10, released at 08:00.
    assert jobs["2003"] == (16 * 600, 16 * (480 - 267) * 60, None, None, None)
    # 2001 failed (config error) without step records: no setup, tail or hang can be told - null, not 0.
    assert jobs["2001"] == (None, None, None, None, None)
    b8 = _waiting(demo_run, "B-8", "exploration")
    assert b8["hang_after_fault_gpu_hours"] is None and b8["setup_gpu_hours"] is None


def test_no_waiting_total_anywhere(demo_run):
    columns = [
        r[0]
        for r in demo_run.query(
            "select column_name from information_schema.columns where table_schema = 'marts' "
            "and table_name = 'fct_batch_waiting' order by ordinal_position"
        )
    ]
    hour_columns = [c for c in columns if c.endswith("_gpu_hours")]
    cost_columns = [c for c in columns if c.endswith("_cost")]
    assert hour_columns == [f"{w}_gpu_hours" for w in WAITING]
    assert cost_columns == [f"{w}_cost" for w in WAITING if w != "queued"]  # queued holds no GPU: no cost
    assert not [c for c in columns if "total" in c or c in ("waiting_gpu_hours", "waiting_cost")]
    # No column is the sum of the others: a total would sit beside two or more non-zero parts, so every row with
    # three or more non-zero figures is checked.
    for group in (hour_columns, cost_columns):
        rows = demo_run.query(f"select {', '.join(group)} from marts.fct_batch_waiting")  # noqa: S608 - fixed names
        checked = 0
        for row in rows:
            values = [v or 0 for v in row]
            if sum(1 for v in values if v) < 3:
                continue
            checked += 1
            for value in values:
                assert value != sum(values) - value
        assert checked > 0


def test_reserved_capacity_is_a_month_figure_in_hours(demo_run):
    rows = {
        r[0].isoformat(): r[1:]
        for r in demo_run.query("""
        select month, available_gpu_hours, training_gpu_hours, serving_gpu_hours, idle_gpu_hours
        from marts.fct_capacity_reconciliation""")
    }
    # Finished jobs' occupied GPU-hours in November: B-7 188, B-8 8+8+8+128+8+8+4 = 172, the unattributed
    # notebook 3001 8 (3002 is still running; B-10's job ran on rented GPUs); serving R-S1 runs on 2 owned GPUs.
    training, serving = 188 + 172 + 8, 2 * NOVEMBER_HOURS
    available = 16 * NOVEMBER_HOURS
    assert rows["2026-11-01"] == (
        Decimal(available),
        Decimal(training),
        Decimal(serving),
        Decimal(available - training - serving),
    )
    # October: the servers were in service, nothing ran.
    assert rows["2026-10-01"] == (Decimal(16 * 31 * 24), 0, 0, Decimal(16 * 31 * 24))


def test_the_contract_explains_why_waiting_is_not_summed(demo_run):
    text = demo_run.row(
        "select description from staging.stg_contract__enumerations "
        "where enumeration = 'misread_field' and code = 'waiting_not_one_number'"
    )["description"]
    assert "never added together" in text


def _event(job_id: str, event: str, at: str, state: str | None = None, **labels: str) -> str:
    extra = {"state": state} if state else {}
    return json.dumps(
        {
            "job_id": job_id,
            "event": event,
            "at": at,
            "gpus_requested": 4,
            "gpus_allocated": 4,
            "time_limit_s": 7200,
            "labels": {"batch": "B-1", "phase": "training", "reason": "planned_experiment", **labels},
            **extra,
        }
    )


def test_kubernetes_queue_requeue_gap_and_restart(tmp_path):
    landing = one_batch_landing(tmp_path)
    (landing / "scheduler" / "events.jsonl").write_text(
        "\n".join(
            [
                _event("k1", "submit", "2026-11-02T00:00:00"),
                _event("k1", "start", "2026-11-02T01:00:00"),
                _event("k1", "preempt", "2026-11-02T02:00:00"),
                _event("k1", "requeue", "2026-11-02T02:30:00"),
                _event("k1", "start", "2026-11-02T03:00:00"),
                _event("k1", "end", "2026-11-02T04:00:00", state="OOMKilled"),
                _event("k2", "submit", "2026-11-02T04:15:00", reason="failure_retry", restart_of="k1"),
                _event("k2", "start", "2026-11-02T05:00:00", reason="failure_retry", restart_of="k1"),
                _event("k2", "end", "2026-11-02T06:00:00", state="Succeeded", reason="failure_retry", restart_of="k1"),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    warehouse = tmp_path / "warehouse.duckdb"
    assert run_pipeline(landing, warehouse)
    con = duckdb.connect(str(warehouse), read_only=True)
    jobs = {
        r[0]: r[1:]
        for r in con.execute("""
        select job_id, queued_gpu_seconds, requeue_gap_seconds, restart_recovery_seconds,
               recovery_ends_at_first_step, preemption_recovery_gpu_seconds, preemption_recovery_cost
        from intermediate.int_job_waiting_measured""").fetchall()
    }
    row = con.execute(
        "select queued_gpu_hours, preemption_recovery_gpu_hours from marts.fct_batch_waiting "
        "where batch_id = 'B-1' and phase = 'training'"
    ).fetchone()
    con.close()
    # k1 queued 1 h on 4 GPUs and lost its GPUs 02:00-03:00; k2, its restart without step records, recovered
    # from k1's end (04:00) to its own start (05:00) - a lower bound, flagged - after 45 minutes in the queue.
    assert jobs["k1"] == (4 * 3600, 3600, None, None, 4 * 3600, None)
    assert jobs["k2"] == (4 * 2700, None, 3600, False, 4 * 3600, None)
    assert row == (Decimal(4 * 3600 + 4 * 2700) / 3600, Decimal(8))


ARRAY_HEADER = "JobID|JobIDRaw|State|Submit|Start|End|Elapsed|Timelimit|NNodes|ReqTRES|AllocTRES|Comment"


def _array_record(
    job_id: str, state: str, start: str, end: str, gpus: int, alloc: str = "", elapsed: str = "00:00:00"
) -> str:
    return (
        f"{job_id}|{job_id.split('_')[0]}|{state}|2026-11-05T01:00:00|{start}|{end}|{elapsed}|02:00:00|1|"
        f"cpu=8,gres/gpu={gpus},node=1|{alloc}|batch=B-1;phase=exploration"
    )


def test_each_task_of_a_pending_array_is_a_job_that_waits(tmp_path):
    """A job is what Slurm gives a JobID: a pending array's one sacct record stands for each of its tasks still
    pending, every one a job that waits with its own GPUs. B-1 exploration, all submitted 5 November 01:00:
    5001_[1-3] (8 GPUs) still pending; 5002_[2,4] (4 GPUs) cancelled while pending at 01:30 (Slurm writes the
    cancel time as Start and End of a job cancelled before it ran); 5003 (8 GPUs) ran 02:00-02:30."""
    landing = one_batch_landing(tmp_path)
    (landing / "scheduler" / "sacct.txt").write_text(
        "\n".join(
            [
                ARRAY_HEADER,
                _array_record("5001_[1-3]", "PENDING", "Unknown", "Unknown", 8),
                _array_record("5002_[2,4]", "CANCELLED", "2026-11-05T01:30:00", "2026-11-05T01:30:00", 4),
                _array_record(
                    "5003",
                    "COMPLETED",
                    "2026-11-05T02:00:00",
                    "2026-11-05T02:30:00",
                    8,
                    "cpu=8,gres/gpu=8,node=1",
                    elapsed="00:30:00",
                ),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    warehouse = tmp_path / "warehouse.duckdb"
    assert run_pipeline(landing, warehouse)
    [row] = query(
        warehouse,
        "select jobs, jobs_not_started, queued_gpu_hours from marts.fct_batch_waiting "
        "where batch_id = 'B-1' and phase = 'exploration'",
    )
    [compute] = query(warehouse, "select jobs, failed_jobs from marts.fct_batch_compute where batch_id = 'B-1'")
    [failures] = query(warehouse, "select sum(failed_jobs) from marts.fct_batch_failures where batch_id = 'B-1'")
    # Jobs: 3 tasks of 5001 + 2 of 5002 + 5003 = 6 (not 3 records); not started: 5001's 3 tasks (not 1).
    # Queued: 5002's two tasks each waited 30 min with 4 GPUs, 2 x 4 x 0.5 = 4 GPU-hours (not one task's 2), and
    # 5003 waited 1 h with 8 GPUs, 8 GPU-hours: 12 GPU-hours.
    assert row == (3 + 2 + 1, 3, Decimal(2 * 4 * 30 + 8 * 60) / 60)
    # The compute bill counts the same 6 jobs; the two cancelled tasks of 5002 are two failed (cancelled) jobs.
    assert compute == (3 + 2 + 1, 2)
    assert failures == (2,)


# The demo's prices per available GPU-hour: 2 x 457,798 straight-line over 3 x 365 days, plus 3,456 facility, over
# 16 GPUs x the month's hours (October 2.4678.., November 2.4775..).
OCTOBER_PRICE = (Fraction(2 * 457_798 * 31, 3 * 365) + 3456) / (16 * 31 * 24)
NOVEMBER_PRICE = (Fraction(2 * 457_798 * 30, 3 * 365) + 3456) / (16 * 30 * 24)
SACCT_HEADER = (
    "JobID|JobIDRaw|JobName|Account|Partition|User|WCKey|State|ExitCode|DerivedExitCode|Reason|FailedNode|Restarts|"
    "Submit|Eligible|Start|End|Elapsed|Timelimit|NNodes|NodeList|ReqTRES|AllocTRES|Comment|AdminComment"
)


def _sacct(job: str, state: str, restarts: int, submit: str, eligible: str, start: str, end: str, batch: str) -> str:
    tres = "billing=8,cpu=8,gres/gpu=8,mem=64G,node=1"
    return (
        f"{job}|{job}|q|post-training|gpu|trainer|*|{state}|0:0|0:0|None||{restarts}|2026-11-{submit}|"
        f"{eligible and '2026-11-' + eligible or 'Unknown'}|2026-11-{start}|2026-11-{end}|01:00:00|08:00:00|1|gpu-q|"
        f"{tres}|{tres}|batch={batch};phase=training;reason=planned_experiment|"
    )


def _cents(value: Fraction) -> Decimal:
    return (Decimal(value.numerator) / Decimal(value.denominator)).quantize(Decimal("0.01"), ROUND_HALF_UP)


def test_requeued_held_and_month_crossing_queues(demo_copy):
    """Three queues on the demo's owned capacity, each in a batch of its own:
    B-Q1: job 9501 (8 GPUs) preempted and requeued, as sacct --duplicates lists it: its first incarnation ran
    00:00-01:00; Slurm gave the second Submit 01:00 (the requeue) and Restarts=1; it started at 03:00.
    B-Q2: job 9301 (8 GPUs) submitted 00:00, held by a dependency until Eligible 10:00, started 10:05.
    B-Q3: Kubernetes job kw-1 (1 GPU) submitted 31 October 12:00, started 1 November 12:00."""
    landing = demo_copy / "landing"
    registry = landing / "registry" / "batches.csv"
    b8 = next(line for line in registry.read_text(encoding="utf-8").splitlines() if line.startswith("B-8,"))
    with registry.open("a", encoding="utf-8") as out:
        out.writelines(b8.replace("B-8,", f"{batch},", 1) + "\n" for batch in ("B-Q1", "B-Q2", "B-Q3"))
    (landing / "scheduler" / "sacct_queues.txt").write_text(
        "\n".join(
            [
                SACCT_HEADER,
                _sacct("9501", "PREEMPTED", 0, "20T00:00:00", "20T00:00:00", "20T00:00:00", "20T01:00:00", "B-Q1"),
                _sacct("9501", "COMPLETED", 1, "20T01:00:00", "20T01:00:00", "20T03:00:00", "20T04:00:00", "B-Q1"),
                _sacct("9301", "COMPLETED", 0, "24T00:00:00", "24T10:00:00", "24T10:05:00", "24T11:05:00", "B-Q2"),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    kw = {
        "gpus_requested": 1,
        "gpus_allocated": 1,
        "time_limit_s": 7200,
        "labels": {"batch": "B-Q3", "phase": "training"},
    }
    (landing / "scheduler" / "queue_events.jsonl").write_text(
        "\n".join(
            json.dumps({"job_id": "kw-1", "event": event, "at": at, **extra, **kw})
            for event, at, extra in (
                ("submit", "2026-10-31T12:00:00Z", {}),
                ("start", "2026-11-01T12:00:00Z", {}),
                ("end", "2026-11-01T13:00:00Z", {"state": "Succeeded"}),
            )
        )
        + "\n",
        encoding="utf-8",
    )
    warehouse = demo_copy / "warehouse.duckdb"
    assert run_pipeline(landing, warehouse)
    con = duckdb.connect(str(warehouse), read_only=True)
    jobs = {
        (r[0], r[1].hour): r[2:]
        for r in con.execute("""
        select job_id, submit_at, queued_gpu_seconds, restart_recovery_seconds, preemption_recovery_gpu_seconds,
               recovery_ends_at_first_step
        from intermediate.int_job_waiting_measured where job_id in ('9501', '9301', 'kw-1')""").fetchall()
    }
    waiting = {
        r[0]: r[1:]
        for r in con.execute(
            "select batch_id, queued_gpu_hours, preemption_recovery_gpu_hours from marts.fct_batch_waiting "
            "where batch_id like 'B-Q%'"
        ).fetchall()
    }
    savings = {
        r[0]: r[1:]
        for r in con.execute(
            "select batch_id, amount, gpu_hours from marts.fct_batch_savings "
            "where batch_id like 'B-Q%' and category = 'queueing_on_owned_capacity'"
        ).fetchall()
    }
    con.close()
    # Compared whole, so that a failure shows every figure that is off.
    assert {"jobs": jobs, "waiting": waiting, "savings": savings} == {
        "jobs": {
            # B-Q1: the first incarnation started when submitted; the second recovers 8 GPUs x 01:00-03:00 (no step
            # records: to its start, a lower bound), none of it queued.
            ("9501", 0): (0, None, None, None),
            ("9501", 1): (0, 7200, 8 * 7200, False),
            # B-Q2: queued from Eligible, 8 GPUs x 5 minutes (not 8 x 10 h 5 min from Submit).
            ("9301", 0): (8 * 300, None, None, None),
            ("kw-1", 12): (24 * 3600, None, None, None),
        },
        "waiting": {
            "B-Q1": (Decimal(0), Decimal(16)),
            "B-Q2": (hours(8 * 5), None),
            "B-Q3": (Decimal(24), None),
        },
        "savings": {
            # B-Q1: a requeue's wait is no queueing saving.
            "B-Q1": (Decimal(0), None),
            "B-Q2": (_cents(Fraction(8 * 300, 3600) * NOVEMBER_PRICE), hours(8 * 5)),
            # B-Q3: 12 h queued in October at its price, 12 h in November at its own: 29.61.. + 29.73.. = 59.34.
            "B-Q3": (_cents(12 * OCTOBER_PRICE + 12 * NOVEMBER_PRICE), Decimal(24)),
        },
    }
    assert savings["B-Q3"][0] == Decimal("59.34")
