"""Real ``sacct`` output, as Slurm wrote it at a real site, read through the scheduler source (issue 10).

``tests/data/slurm/hb_jobinfo_sacct.txt`` is the University of Groningen's capture of 100 jobs of its Hábrók cluster
(origin, licence and the command in tests/data/slurm/README.md), copied byte for byte: ``--parsable --noheader
--delimiter=☃``, local times of Europe/Amsterdam without a zone, steps, array tasks, typed GPUs, ``CANCELLED by``,
``TIMEOUT``, ``NODE_FAIL``, pending and running jobs, and no ``Comment`` labels.

``tests/data/slurm/sonar_sacct_output.txt`` is NordicHPC/sonar's capture of the University of Oslo's Fox cluster
(same README), written with sonar's own field list: ``TimelimitRaw`` and ``ElapsedRaw`` instead of ``Timelimit`` and
``Elapsed``, and no ``ReqTRES``: it loads with every job's requested GPUs unknown (issue 10). Each expected value
below was read by hand from the file's line.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from cost_pipeline.ingest.scheduler import (
    SacctOptions,
    duration_field,
    parse_duration,
    parse_tres_gpus,
    resolved_times,
    split_sacct_lines,
)
from tests.test_telemetry_formats import _load

HABROK = Path(__file__).parent / "data" / "slurm" / "hb_jobinfo_sacct.txt"
LANDED = "scheduler/hb_jobinfo_sacct.txt"
# The --format list of the capture's sacct command (test/data/generate_data.sh of rug-cit-hpc/hb-jobinfo), in order.
HABROK_FIELDS = (
    "JobID,JobName,User,Partition,NodeList,NNodes,NCPUs,NTasks,State,Submit,Start,End,Timelimit,Elapsed,TotalCPU,"
    "CPUTime,UserCPU,SystemCPU,ReqMem,MaxRSS,MaxVMSize,ReqTRES,AllocTRES,TRESUsageInMax,TRESUsageInTot,"
    "TRESUsageOutTot,MaxDiskRead,MaxDiskWrite,MaxRSSNode,MaxRSSTask,MaxVMSizeNode,MaxVMSizeTask,MaxDiskReadNode,"
    "MaxDiskReadTask,MaxDiskWriteNode,MaxDiskWriteTask,Comment"
).split(",")

FOX = Path(__file__).parent / "data" / "slurm" / "sonar_sacct_output.txt"
FOX_LANDED = "scheduler/sonar_sacct_output.txt"
# SACCT_FIELDS of sonar's src/slurmjobs.rs, the -o list of its `sacct -aP ... --noheader` (README), in order.
SONAR_FIELDS = (
    "JobID,JobIDRaw,User,Account,State,Start,End,AveCPU,AveDiskRead,AveDiskWrite,AveRSS,AveVMSize,ElapsedRaw,ExitCode,"
    "Layout,MaxRSS,MaxVMSize,MinCPU,ReqCPUS,ReqMem,ReqNodes,Reservation,Submit,Suspended,SystemCPU,TimelimitRaw,"
    "UserCPU,NodeList,Partition,AllocTRES,Priority,JobName"
).split(",")
OSLO = ZoneInfo("Europe/Oslo")


def _load_habrok(tmp_path: Path, time_zone: str = "Europe/Amsterdam", fields: list[str] | None = HABROK_FIELDS):
    landing = tmp_path / "landing"
    (landing / "scheduler").mkdir(parents=True)
    shutil.copyfile(HABROK, landing / LANDED)
    options = SacctOptions(sacct_delimiter="☃", sacct_fields=fields, time_zone=time_zone)
    return _load(landing, "scheduler_jobs", options=options)


def _by_id(rows: list[dict]) -> dict[str, dict]:
    return {row["job_id"]: row for row in rows}


def test_every_line_of_the_real_export_is_staged(tmp_path):
    """242 lines: 100 jobs (allocations, array tasks among them) and their 142 steps; none quarantined."""
    rows, quarantined, ledger = _load_habrok(tmp_path)
    assert ledger == {LANDED: (242, 242, 0)}
    assert quarantined == []
    assert [row["source_line"] for row in rows] == list(range(1, 243))
    assert sum(row["record_type"] == "allocation" for row in rows) == 100
    assert sum(row["record_type"] == "step" for row in rows) == 142
    # Array tasks are allocations of their own (lines 4, 19, 20, …): 24 of the 100.
    assert sum(row["record_type"] == "allocation" and "_" in row["job_id"] for row in rows) == 24
    # The capture asks for Comment and the site writes none there: every job is unlabelled, none guessed.
    assert {(row["batch_id"], row["phase"], row["run_reason"]) for row in rows} == {(None, None, None)}


def test_real_gpu_jobs_read_as_sacct_wrote_them(tmp_path):
    rows, _, _ = _load_habrok(tmp_path)
    jobs = _by_id(rows)
    # Line 209: two A100s (gres/gpu:a100=2,gres/gpu=2), cancelled by uid 33128806; Start 2024-04-13T20:33:32 and
    # End 2024-04-16T17:42:48 in CEST (UTC+2), Elapsed 2-21:09:16, Timelimit 3-00:00:00.
    cancelled = jobs["8150389"]
    assert (cancelled["record_type"], cancelled["state"], cancelled["cancelled_by"]) == (
        "allocation",
        "CANCELLED",
        "33128806",
    )
    assert (cancelled["start_at"], cancelled["end_at"]) == (
        datetime(2024, 4, 13, 18, 33, 32),
        datetime(2024, 4, 16, 15, 42, 48),
    )
    assert (cancelled["gpus_requested"], cancelled["gpus_allocated"]) == (2, 2)
    assert (cancelled["elapsed_seconds"], cancelled["time_limit_seconds"]) == (
        2 * 86400 + 21 * 3600 + 9 * 60 + 16,
        259200,
    )
    assert (cancelled["node_count"], cancelled["node_list"], cancelled["partition"]) == (1, "a100gpu3", "gpulong")
    # Line 231: four A100s on two nodes, 16:15:39 to 16:19:32 CEST.
    two_nodes = jobs["7971484"]
    assert (two_nodes["state"], two_nodes["gpus_allocated"], two_nodes["node_count"], two_nodes["node_list"]) == (
        "COMPLETED",
        4,
        2,
        "a100gpu[2,4]",
    )
    assert (two_nodes["start_at"], two_nodes["end_at"]) == (
        datetime(2024, 4, 5, 14, 15, 39),
        datetime(2024, 4, 5, 14, 19, 32),
    )
    # Lines 10 and 11: its steps, each of its allocation, run inside it (its V100 in their AllocTRES too).
    assert [
        (jobs[step]["record_type"], jobs[step]["allocation_id"], jobs[step]["step_name"], jobs[step]["state"])
        for step in ("7965768.batch", "7965768.extern")
    ] == [("step", "7965768", "batch", "CANCELLED"), ("step", "7965768", "extern", "COMPLETED")]
    assert jobs["7965768"]["cancelled_by"] == "10314909" and jobs["7965768.batch"]["cancelled_by"] is None


def test_real_array_task_pending_and_running_jobs(tmp_path):
    rows, _, _ = _load_habrok(tmp_path)
    jobs = _by_id(rows)
    # Line 4: array task 5908801_3, after the change to CET (UTC+1): 2023-11-02T21:16:50 is 20:16:50 UTC. Its TRES
    # names no GPU (the cluster counted none in 2023, though the node is v100gpu10): 0 GPUs, as sacct says.
    task = jobs["5908801_3"]
    assert (task["record_type"], task["allocation_id"], task["state"]) == ("allocation", "5908801_3", "COMPLETED")
    assert (task["start_at"], task["end_at"]) == (datetime(2023, 11, 2, 20, 16, 50), datetime(2023, 11, 4, 0, 54, 16))
    assert (task["gpus_allocated"], task["elapsed_seconds"]) == (0, 86400 + 4 * 3600 + 37 * 60 + 26)
    # Line 3: cancelled while pending: Start None, no node ("None assigned"), ended 14:55:57 CEST.
    never_ran = jobs["4047445"]
    assert (never_ran["state"], never_ran["cancelled_by"], never_ran["start_at"], never_ran["node_list"]) == (
        "CANCELLED",
        "10290820",
        None,
        None,
    )
    assert never_ran["end_at"] == datetime(2023, 9, 1, 12, 55, 57)
    # Line 217: still running when sacct ran (End Unknown), 03:31:51 after its 09:39:58 CEST start.
    running = jobs["8322514_33"]
    assert (running["state"], running["start_at"], running["end_at"], running["elapsed_seconds"]) == (
        "RUNNING",
        datetime(2024, 4, 19, 7, 39, 58),
        None,
        3 * 3600 + 31 * 60 + 51,
    )
    assert sum(row["state"] == "PENDING" and row["start_at"] is None for row in rows) == 7


def test_the_real_export_agrees_with_itself_in_its_own_time_zone_only(tmp_path):
    """Job 7195760 (lines 61-63) ran from 2024-03-21T13:40:23 to 2024-03-31T14:40:50 local time, across the start of
    summer time in Amsterdam, Elapsed 10-00:00:27: read in Europe/Amsterdam every ended row's End - Start is its
    Elapsed to the second; read as UTC those three rows are an hour longer than sacct measured them."""

    def disagreeing(rows: list[dict]) -> dict[str, float]:
        return {
            row["job_id"]: (row["end_at"] - row["start_at"]).total_seconds() - row["elapsed_seconds"]
            for row in rows
            if row["start_at"] is not None and row["end_at"] is not None
            if (row["end_at"] - row["start_at"]).total_seconds() != row["elapsed_seconds"]
        }

    amsterdam, _, _ = _load_habrok(tmp_path / "amsterdam")
    as_utc, _, _ = _load_habrok(tmp_path / "utc", time_zone="UTC")
    assert sum(row["end_at"] is not None and row["start_at"] is not None for row in amsterdam) == 223
    assert disagreeing(amsterdam) == {}
    assert disagreeing(as_utc) == {"7195760": 3600, "7195760.batch": 3600, "7195760.extern": 3600}
    assert _by_id(amsterdam)["7195760"]["start_at"] == datetime(2024, 3, 21, 12, 40, 23)  # CET, UTC+1
    assert _by_id(amsterdam)["7195760"]["end_at"] == datetime(2024, 3, 31, 12, 40, 50)  # CEST, UTC+2


def test_the_real_export_without_its_field_list_is_refused_whole(tmp_path):
    """The capture has no header line (--noheader): without sacct_fields nothing names its columns, so the file is
    quarantined whole at line 0, rule sacct_header, its 242 lines counted, none read by guessing."""
    rows, quarantined, ledger = _load_habrok(tmp_path, fields=None)
    assert rows == []
    assert quarantined == [(LANDED, 0, "sacct_header")]
    assert ledger == {LANDED: (242, 0, 242)}


def _fox_rows() -> dict[str, dict[str, str]]:
    """The Fox capture's lines by JobID, cut at sonar's field list (every line has its 32 fields)."""
    lines = FOX.read_text(encoding="utf-8").splitlines(keepends=True)
    split = list(split_sacct_lines(lines, "|", SONAR_FIELDS))
    assert [line for line, _, _ in split] == list(range(1, 302))
    assert all(values is not None for _, values, _ in split)
    return {values["JobID"]: values for _, values, _ in split}


def test_sonar_raw_durations_agree_with_the_real_times():
    """301 lines: 122 allocations and 179 steps. Read in Europe/Oslo, every ended row's End - Start is its
    ElapsedRaw (seconds) to the second; every TimelimitRaw (minutes, blank on a step) reads."""
    rows = _fox_rows()
    assert len(rows) == 301 and sum("." not in job for job in rows) == 122
    ended = 0
    for values in rows.values():
        elapsed = duration_field(values, "Elapsed")
        times = resolved_times(values, OSLO, elapsed, parse_duration(values["Suspended"], "Suspended"))
        if times["Start"] is not None and times["End"] is not None:
            ended += 1
            assert (times["End"] - times["Start"]).total_seconds() == elapsed, values["JobID"]
        assert duration_field(values, "Timelimit") is None or "." not in values["JobID"]
    assert ended == 166  # and 100 rows running (End Unknown), 31 pending, 4 cancelled before they started


def test_two_real_gpu_jobs_read_from_their_raw_durations():
    rows = _fox_rows()
    # Line 83: job 1955319, TIMEOUT, one A100 80GB; 2025-09-25T09:05:15 to 2025-09-26T08:05:26 CEST (UTC+2),
    # ElapsedRaw 82811 (23:00:11), TimelimitRaw 1380 (23 hours).
    timeout = rows["1955319"]
    times = resolved_times(timeout, OSLO)
    assert (times["Start"], times["End"]) == (datetime(2025, 9, 25, 7, 5, 15), datetime(2025, 9, 26, 6, 5, 26))
    assert (duration_field(timeout, "Elapsed"), duration_field(timeout, "Timelimit")) == (82811, 1380 * 60)
    assert parse_tres_gpus(timeout["AllocTRES"]).gpus == 1
    # Line 1: job 1879824, RUNNING when sonar ran sacct (End Unknown), since 2025-09-12T14:06:12 CEST; ElapsedRaw
    # 1192379, TimelimitRaw 20160 (14 days), one A100.
    running = rows["1879824"]
    times = resolved_times(running, OSLO)
    assert (times["Start"], times["End"]) == (datetime(2025, 9, 12, 12, 6, 12), None)
    assert (duration_field(running, "Elapsed"), duration_field(running, "Timelimit")) == (1192379, 14 * 86400)
    assert parse_tres_gpus(running["AllocTRES"]).gpus == 1


def test_the_fox_capture_loads_whole_with_its_requests_unknown(tmp_path):
    """Loaded as sonar asks sacct for it (its field list as sacct_fields, Europe/Oslo), through the scheduler
    source: every one of the 301 lines is staged, none quarantined (it was refused whole for lacking ReqTRES,
    issue 10). What each job requested is not in the file, so every requested count is null (unknown), never 0 and
    never its AllocTRES; what it was allocated is read from AllocTRES as in any export."""
    landing = tmp_path / "landing"
    (landing / "scheduler").mkdir(parents=True)
    shutil.copyfile(FOX, landing / FOX_LANDED)
    options = SacctOptions(sacct_fields=SONAR_FIELDS, time_zone="Europe/Oslo")
    rows, quarantined, ledger = _load(landing, "scheduler_jobs", options=options)
    assert quarantined == []
    assert ledger == {FOX_LANDED: (301, 301, 0)}
    assert [row["source_line"] for row in rows] == list(range(1, 302))
    requested = ("gpus_requested", "mig_instances_requested", "mig_slices_requested", "shards_requested")
    assert {tuple(row[column] for column in (*requested, "mps_requested")) for row in rows} == {(None,) * 5}
    jobs = _by_id(rows)
    # Line 83: job 1955319, TIMEOUT, AllocTRES one A100 80GB (gres/gpu:a100_80=1,gres/gpu=1); 07:05:15 to 06:05:26 UTC.
    timeout = jobs["1955319"]
    assert (timeout["state"], timeout["gpus_allocated"], timeout["gpus_requested"]) == ("TIMEOUT", 1, None)
    assert (timeout["start_at"], timeout["end_at"]) == (
        datetime(2025, 9, 25, 7, 5, 15),
        datetime(2025, 9, 26, 6, 5, 26),
    )
    assert (timeout["elapsed_seconds"], timeout["time_limit_seconds"]) == (82811, 1380 * 60)
    # The 31 pending jobs hold nothing yet: 0 GPUs allocated (AllocTRES empty), their request unknown.
    pending = [row for row in rows if row["state"] == "PENDING"]
    assert len(pending) == 31
    assert {(row["gpus_allocated"], row["gpus_requested"], row["start_at"]) for row in pending} == {(0, None, None)}
