"""A sacct export read in another time zone than the one it was written in loads clean: End - Start still equals
Elapsed. Its jobs' device samples, labelled with their JobIDs, then fall outside the jobs' windows, GPU time no job
claims (label_names_no_running_job); the night warns, naming each such job and the offset (issue 10: no silent wrong
figure).

The demo's landing folder (copied) gains a sacct --parsable2 export written in Asia/Shanghai and loaded as UTC (no
time_zone), and dcgm samples (UTC, each labelled with its job) of two 8-GPU jobs of batch B-8 on 26 November:
- 9801 on gpu-s ran 01:00 to 03:00 UTC; sacct printed 09:00 to 11:00 (local), read as UTC: its samples, one a minute
  from 01:00 to 02:59, lie 8 hours before its sacct times, none inside them;
- 9802 on gpu-t ran 04:00 to 05:00 UTC and its export is right (UTC), but the exporter kept labelling its GPU for two
  more minutes after it ended (05:00 and 05:01): two unclaimed samples past its end, no time zone.
The warn test sacct_times_off_their_samples lists 9801 alone, with the samples -8.0 hours off its sacct times; the
night exits 0.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.helpers import DEVICE_SAMPLES_HEADER, query, sacct_text
from tests.test_exclusive_nodes import JOB

pytestmark = pytest.mark.xdist_group("sacct_time_zone_samples_night")

TRES = "billing=8,cpu=8,gres/gpu=8,mem=64G,node=1"
WORKING = "0.9,0.9,0.5,1000000.0,1000000.0,400.0"
WARNING = (
    "warning: dbt test sacct_times_off_their_samples on intermediate/int_unattributed_gpu_days returned 1 failing "
    "row, stored in audit.sacct_times_off_their_samples (warn severity: the night goes on)"
)
# JobID -> host, sacct's Start and End as the export says them, and the samples' first and last minute (UTC).
JOBS = {
    "9801": ("gpu-s", "2026-11-26T09:00:00", "2026-11-26T11:00:00", "2026-11-26T01:00:00", "2026-11-26T02:59:00"),
    "9802": ("gpu-t", "2026-11-26T04:00:00", "2026-11-26T05:00:00", "2026-11-26T04:00:00", "2026-11-26T05:01:00"),
}


def _sacct() -> str:
    return sacct_text(
        JOB
        | {"JobID": job_id, "JobIDRaw": job_id, "JobName": f"b8-{host}", "NodeList": host, "Elapsed": elapsed}
        | {"Submit": start, "Eligible": start, "Start": start, "End": end, "ReqTRES": TRES, "AllocTRES": TRES}
        for job_id, (host, start, end, _, _) in JOBS.items()
        for elapsed in [str(datetime.fromisoformat(end) - datetime.fromisoformat(start)).zfill(8)]
    )


def _samples() -> str:
    """One sample a minute of GPU 0 of each job's host, labelled with its JobID."""
    rows = [DEVICE_SAMPLES_HEADER]
    for job_id, (host, _, _, first, last) in JOBS.items():
        at, until = datetime.fromisoformat(first), datetime.fromisoformat(last)
        while at <= until:
            rows.append(f"{at.isoformat()},{host},0,{job_id},{WORKING}")
            at += timedelta(minutes=1)
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def night(demo_run, tmp_path_factory):
    files = {"scheduler/sacct_2026-11_shanghai.txt": _sacct(), "telemetry/dcgm_2026-11-26_labelled.csv": _samples()}
    return demo_run.night_with(tmp_path_factory.mktemp("sacct_time_zone_samples") / "night", files)


def test_the_night_warns_naming_the_job_whose_samples_lie_a_time_zone_away(night):
    assert night.code == 0, night.err
    assert WARNING in night.out.splitlines()
    listed = query(
        night.warehouse,
        "select job_id, batch_id, start_at, end_at, first_sampled_at, last_sampled_at, samples, samples_offset_hours "
        "from audit.sacct_times_off_their_samples",
    )
    assert listed == [
        ("9801", "B-8", datetime(2026, 11, 26, 9), datetime(2026, 11, 26, 11))
        + (datetime(2026, 11, 26, 1), datetime(2026, 11, 26, 2, 59), 120, -8.0)
    ]


def test_the_demo_has_no_job_whose_samples_lie_a_time_zone_away(demo_run):
    assert demo_run.query("select count(*) from audit.sacct_times_off_their_samples") == [(0,)]
