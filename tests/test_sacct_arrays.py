"""A pending Slurm job array (sacct's `2002_[3-4]`: the tasks not started yet, listed as one record) and its tasks,
each listed as a record of its own once it runs (`2002_3`), in this export or a later one."""

from __future__ import annotations

import json

from tests.helpers import staged_rows

HEADER = ["JobID", "JobIDRaw", "State", "Submit", "Start", "End", "Elapsed", "Timelimit", "NNodes"]
HEADER += ["ReqTRES", "AllocTRES", "Comment"]
SUBMIT = "2026-11-05T01:00:00"


def _pending(job_id: str) -> str:
    values = [job_id, job_id.split("_")[0], "PENDING", SUBMIT, "Unknown", "Unknown", "00:00:00", "02:00:00", "1"]
    return "|".join([*values, "cpu=64,gres/gpu=8,node=1", "", "batch=B-8;phase=exploration"])


def _ran(job_id: str, raw: str) -> str:
    values = [job_id, raw, "COMPLETED", SUBMIT, "2026-11-05T02:00:00", "2026-11-05T03:00:00", "01:00:00"]
    values += ["02:00:00", "1", "cpu=64,gres/gpu=8,node=1", "cpu=64,gres/gpu=8,node=1", "batch=B-8"]
    return "|".join(values)


def _pending_json(array_job: int, mask: str, limit: int) -> dict:
    """A pending array's record in sacct --json (Slurm's data_parser v0.0.4x slurmdb job, parsers.c): ``task_id``
    unset, ``task`` its task ids as the hex mask Slurm stores (tasks 1, 3, 5-7: ``0xEA``), its limit apart."""
    return {
        "job_id": array_job,
        "array": {
            "job_id": array_job,
            "limits": {"max": {"running": {"tasks": limit}}},
            "task_id": {"set": False, "infinite": False, "number": 0},
            "task": mask,
        },
        "state": {"current": ["PENDING"], "reason": "JobArrayTaskLimit"},
        "time": {"elapsed": 0, "eligible": 1793667600, "end": 0, "start": 0, "submission": 1793667600, "limit": 120},
        "tres": {"requested": [{"type": "gres", "name": "gpu", "id": 1001, "count": 8}], "allocated": []},
        "allocation_nodes": 1,
        "comment": {"job": "batch=B-8;phase=exploration"},
    }


def _allocations(tmp_path, files: dict[str, list[str]]) -> list[dict]:
    rows = staged_rows(tmp_path, "scheduler_jobs", files, "stg_scheduler__sacct_jobs")
    return sorted((row for row in rows if row["record_type"] == "allocation"), key=lambda row: row["job_id"])


def test_a_pending_range_is_retired_by_the_records_of_its_tasks(tmp_path):
    """The demo's pending 2002_[3-4] stayed beside its tasks 2002_3 and 2002_4 once a later export listed them run:
    B-8 counted 11 jobs, not 10, and 904 requested GPU-hours, not 888 (the range's 16 again). A task of a range
    seen as its own record is no longer pending; a range all of whose tasks are seen is gone, one with tasks not
    seen yet stays (2005_[1,3,5-7%2]: sacct's commas and `%` limit; 2005_3 and 2005_6 ran; 2008_[1-21:4%2]: evenly
    spaced tasks as sacct writes them, with a step, which was quarantined as no JobID; 2008_5 ran)."""
    files = {
        "scheduler/a.txt": ["|".join(HEADER), _pending("2002_[3-4]"), _pending("2005_[1,3,5-7%2]")]
        + [_pending("2006_[1-4]"), _pending("2008_[1-21:4%2]")],
        "scheduler/b.txt": ["|".join(HEADER), _ran("2002_3", "2012"), _ran("2002_4", "2013")]
        + [_ran("2005_3", "2015"), _ran("2005_6", "2016"), _ran("2008_5", "2018")],
        # sacct --json's pending array: its one record stood for one task under its plain job id, 2007.
        "scheduler/c.json": json.dumps({"jobs": [_pending_json(2007, "0xEA", 2)]}).splitlines(),
    }
    staged = _allocations(tmp_path, files)
    assert [(row["job_id"], row["state"]) for row in staged] == [
        ("2002_3", "COMPLETED"),
        ("2002_4", "COMPLETED"),
        ("2005_3", "COMPLETED"),
        ("2005_6", "COMPLETED"),
        ("2005_[1,3,5-7%2]", "PENDING"),
        ("2006_[1-4]", "PENDING"),
        ("2007_[1,3,5-7%2]", "PENDING"),
        ("2008_5", "COMPLETED"),
        ("2008_[1-21:4%2]", "PENDING"),
    ]
    # A pending range stood for one task (the demo's 2002_[3-4] requested 16 GPU-hours, its two tasks 32): it
    # stands for its tasks still pending, 2005's 1, 5 and 7, every task of 2006, 2008's 1, 9, 13, 17 and 21; a task
    # for itself.
    assert [row["array_tasks"] for row in staged] == [1, 1, 1, 1, 3, 4, 5, 1, 5]
