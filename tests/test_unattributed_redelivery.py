"""GPU time no job claims counts each GPU once, whatever copies delivered its samples (docs/fractional_gpus.md,
``int_unattributed_gpu_days``): a file of unclaimed device samples delivered again (identical bytes, or the same
records in other bytes) and, a night later, exported again by its site with the ``cluster`` column added.

On a copy of the demo (whose samples all have their job: its ``fct_unattributed_gpu_hours`` is empty), two spare
hosts no allocation held, spare-01 and spare-02 of cluster alpha, report GPU 0 idle and unlabelled once a minute from
23:55 on 3 November to 00:04 on the 4th: ten samples each, each standing for the 60 s to its GPU's next (the last for
the nominal 60 s), 600 GPU-seconds a GPU. The first night's file names no cluster; the next night alpha's site
delivers the same samples again with the cluster column, and cluster beta, which has a host spare-01 too, delivers
its spare-01's GPU 0 idle at 20 s past each of the same minutes (its own 600 GPU-seconds) with its cluster named.
That night too alpha's site delivers its spare-04's GPU 0, idle at 100 W, in a file without the cluster column (never
again with it), while beta's spare-04 reports its GPU 0 in beta's file at the same instants, idle at 80 W, naming
beta: the readings differ, so alpha's copies are another GPU (of no known cluster), not beta's samples again. So are
alpha's spare-05's in that file, beta's spare-05 reporting 20 s later (no copy to compare): no copy of spare-05 naming
none is a named copy delivered again, so none is taken for beta's.
That night also a sample some job claims, delivered both naming no cluster and naming it: spare-03 is a host of
alpha and of beta, and both clusters' sacct exports have a job on it over the same ten minutes (alpha's JobID 7001,
beta's 7002, one GPU each); its GPU 0's samples come naming no cluster (so two clusters' jobs hold the host:
``several_jobs_on_host``) and, from alpha's site, naming alpha (alpha's job only: 7001's, by host and time).
And alpha's jobs 7003 and 7004 each hold alpha's spare-06 and spare-07 (one GPU, the same ten minutes), whose GPU 0
reports naming alpha, idle at 100 W (spare-06 unlabelled, found by host and time; spare-07 labelled 7004); beta's
hosts of the same names report their GPU 0 at the same instants, idle at 80 W, the same way (spare-07's labelled
7004, beta's own job of that id, whose export is not delivered), in a file without the cluster column: a copy naming
no cluster that measured something else than the job's own copies of that sample is another host's GPU, no job's.
The nights run only the device samples' source (the second night the sacct exports' too) and what they feed
(``partial_night``)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from tests.helpers import DEVICE_SAMPLES_HEADER, partial_night, query

pytestmark = pytest.mark.xdist_group("unattributed_redelivery")

SOURCES = [("raw", "device_samples")]
SECOND_NIGHT_SOURCES = [*SOURCES, ("raw", "scheduler_jobs")]
START = datetime(2026, 11, 3, 23, 55)
MONTH = date(2026, 11, 1)
MINUTES = 10
HOSTS = ("spare-01", "spare-02")
# The host of alpha and of beta whose samples come at the same instants, alpha's in a file naming no cluster.
TWIN_HOST = "spare-04"
# The host of alpha and of beta whose samples come at other instants, alpha's in a file naming no cluster.
OFFSET_HOST = "spare-05"
# The host of alpha and of beta that both clusters' jobs hold at once, and each cluster's job on it.
HELD_HOST = "spare-03"
HELD_JOBS = {"alpha": "7001", "beta": "7002"}
# alpha's jobs alone on alpha's hosts of these names, each host's GPU found by host and time (no label) or by label;
# beta's hosts of the same names report in a file without the cluster column (another_host_of_the_same_name).
OWN_JOBS = {"spare-06": ("7003", ""), "spare-07": ("7004", "7004")}
SACCT_HEADER = (
    "JobID|JobIDRaw|Cluster|State|Submit|Start|End|Elapsed|Timelimit|NNodes|NodeList|ReqTRES|AllocTRES|Comment"
)


def _samples(host: str, cluster: str | None, seconds: int = 0, watts: str = "100.0", job: str = "") -> list[str]:
    """``host``'s GPU 0, idle at ``watts`` and labelled ``job`` (none: unlabelled), once a minute from START
    (``seconds`` past the minute), as the wide format writes it: the cluster column only when ``cluster`` is given."""
    lines = []
    for minute in range(MINUTES):
        at = (START + timedelta(minutes=minute, seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")
        line = f"{at},{host},0,{job},0.0,0.0,0.0,0.0,0.0,{watts}"
        lines.append(line if cluster is None else f"{line},{cluster}")
    return lines


def _write(path: Path, lines: list[str], cluster_column: bool) -> None:
    header = DEVICE_SAMPLES_HEADER + (",cluster" if cluster_column else "")
    path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")


def _unattributed(warehouse: Path) -> list[tuple]:
    return query(
        warehouse,
        "select sample_month, tier, reason, samples, gpu_hours from marts.fct_unattributed_gpu_hours order by all",
    )


def _gpus(warehouse: Path) -> list[tuple]:
    """Each GPU no job claims: its samples and seconds in int_unattributed_gpu_days (the day's last sample open)."""
    return query(
        warehouse,
        "select cluster, hostname, gpu_index, sum(samples), sum(gpu_seconds), sum(last_sample) "
        "from intermediate.int_unattributed_gpu_days group by all order by all nulls first",
    )


def _shares(warehouse: Path) -> list[tuple]:
    """Each GPU no job claims in fct_gpu_shares: its observed seconds."""
    return query(
        warehouse,
        "select cluster, hostname, gpu_index, share_rule, round(observed_hours * 3600, 6) from marts.fct_gpu_shares "
        "where job_key is null and sample_month = ? order by all nulls first",
        [MONTH],
    )


def _sacct(cluster: str) -> str:
    """``cluster``'s sacct export: its job on HELD_HOST (alpha's also its OWN_JOBS on their hosts), one GPU each,
    submitted five minutes before START and ended MINUTES after it (a demo batch's training)."""
    jobs = [(HELD_JOBS[cluster], HELD_HOST)]
    if cluster == "alpha":
        jobs += [(job, host) for host, (job, _) in OWN_JOBS.items()]
    end = START + timedelta(minutes=MINUTES)
    lines = [
        f"{job}|{job}|{cluster}|COMPLETED|{START - timedelta(minutes=5):%Y-%m-%dT%H:%M:%S}|{START:%Y-%m-%dT%H:%M:%S}|"
        f"{end:%Y-%m-%dT%H:%M:%S}|00:{MINUTES:02d}:00|01:00:00|1|{host}|cpu=8,gres/gpu=1,node=1|"
        "cpu=8,gres/gpu=1,node=1|batch=B-1;phase=training;reason=planned_experiment"
        for job, host in jobs
    ]
    return "\n".join([SACCT_HEADER, *lines]) + "\n"


def _held(warehouse: Path) -> dict[str, list[tuple]]:
    """HELD_HOST's jobs (fct_runs), its GPU time no job claims, and its GPU's holders in fct_gpu_shares; and OWN_JOBS'
    hosts': their jobs (fct_runs, with the compute cost), their copies naming no cluster in the attribution view, and
    their GPUs in int_unattributed_gpu_days and fct_gpu_shares."""
    own_hosts = list(OWN_JOBS)
    return {
        "runs": query(
            warehouse,
            "select cluster, job_id, samples, occupied_gpu_hours, idle_gpu_hours, unobserved_gpu_hours "
            "from marts.fct_runs where job_id in (?, ?) order by 1",
            list(HELD_JOBS.values()),
        ),
        "own_runs": query(
            warehouse,
            "select job_id, samples, occupied_gpu_hours, idle_gpu_hours, unobserved_gpu_hours "
            "from marts.fct_runs where job_id in (?, ?, ?) order by 1",
            [HELD_JOBS["alpha"], *(job for job, _ in OWN_JOBS.values())],
        ),
        "own_costs": query(
            warehouse,
            "select runs.job_id, count(*), round(sum(shares.observed_hours) * 3600, 6), sum(shares.gpu_cost) "
            "from marts.fct_gpu_shares as shares inner join marts.fct_runs as runs on shares.job_key = runs.job_key "
            "where runs.job_id in (?, ?, ?) group by all order by 1",
            [HELD_JOBS["alpha"], *(job for job, _ in OWN_JOBS.values())],
        ),
        "own_unnamed": query(
            warehouse,
            "select hostname, attributed_job_key, attribution, count(*) "
            "from intermediate.int_device_samples_attributed where cluster is null and hostname in (?, ?) "
            "group by all order by all",
            own_hosts,
        ),
        "own_unattributed": query(
            warehouse,
            "select cluster, hostname, sum(samples), sum(gpu_seconds), sum(last_sample) "
            "from intermediate.int_unattributed_gpu_days where hostname in (?, ?) "
            "group by all order by all nulls first",
            own_hosts,
        ),
        "own_shares": query(
            warehouse,
            "select cluster, hostname, job_key is null, attribution, round(observed_hours * 3600, 6), gpu_cost "
            "from marts.fct_gpu_shares where hostname in (?, ?) and sample_month = ? order by all nulls first",
            [*own_hosts, MONTH],
        ),
        "unattributed": query(
            warehouse,
            "select cluster, sum(samples), sum(gpu_seconds) from intermediate.int_unattributed_gpu_days "
            "where hostname = ? group by all order by all nulls first",
            [HELD_HOST],
        ),
        "shares": query(
            warehouse,
            "select cluster, job_key, attribution, share_rule, round(observed_hours * 3600, 6) "
            "from marts.fct_gpu_shares where hostname = ? and sample_month = ? order by all nulls first",
            [HELD_HOST, MONTH],
        ),
    }


@dataclass(frozen=True)
class Nights:
    """The two nights' figures: before alpha's export with the cluster column and beta's file, and after; and
    HELD_HOST's after the second night."""

    first: dict[str, list[tuple]]
    second: dict[str, list[tuple]]
    held: dict[str, list[tuple]]


def _figures(warehouse: Path) -> dict[str, list[tuple]]:
    return {"unattributed": _unattributed(warehouse), "gpus": _gpus(warehouse), "shares": _shares(warehouse)}


@pytest.fixture(scope="module")
def nights(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Nights:
    copy = demo_run.copy_to(tmp_path_factory.mktemp("unattributed_redelivery") / "copy")
    landing, warehouse = copy / "landing", copy / "warehouse.duckdb"
    assert _unattributed(warehouse) == []
    telemetry = landing / "telemetry"
    # The first night: the two hosts' samples without a cluster column, the same file again under another name
    # (identical bytes) and the same records in other bytes (the lines in reverse order).
    first = [line for host in HOSTS for line in _samples(host, None)]
    _write(telemetry / "spare.csv", first, cluster_column=False)
    shutil.copyfile(telemetry / "spare.csv", telemetry / "spare_copy.csv")
    _write(telemetry / "spare_reordered.csv", first[::-1], cluster_column=False)
    assert partial_night(landing, warehouse, SOURCES).code == 0
    assert query(
        warehouse,
        "select source_file, rows_in, rows_staged, duplicate_of from raw.ingested_files "
        "where source_file like 'telemetry/spare%' order by 1",
    ) == [
        ("telemetry/spare.csv", 2 * MINUTES, 2 * MINUTES, None),
        ("telemetry/spare_copy.csv", 0, 0, "telemetry/spare.csv"),
        ("telemetry/spare_reordered.csv", 2 * MINUTES, 2 * MINUTES, None),
    ]
    before = _figures(warehouse)
    # The next night: alpha's site exports the same samples again, with the cluster column; beta's spare-01 reports.
    again = [line for host in HOSTS for line in _samples(host, "alpha")]
    _write(telemetry / "spare_with_cluster.csv", again, cluster_column=True)
    beta = [
        *_samples("spare-01", "beta", seconds=20),
        *_samples(TWIN_HOST, "beta", watts="80.0"),
        *_samples(OFFSET_HOST, "beta", seconds=20, watts="80.0"),
    ]
    _write(telemetry / "beta.csv", beta, cluster_column=True)
    alpha_unnamed = _samples(TWIN_HOST, None) + _samples(OFFSET_HOST, None)
    _write(telemetry / "twin_without_cluster.csv", alpha_unnamed, cluster_column=False)
    # HELD_HOST's jobs of both clusters, and its GPU's samples naming alpha and (a later file by path) naming none.
    for cluster in HELD_JOBS:
        (landing / "scheduler" / f"sacct_{cluster}.txt").write_text(_sacct(cluster), encoding="utf-8")
    _write(telemetry / "held_with_cluster.csv", _samples(HELD_HOST, "alpha"), cluster_column=True)
    _write(telemetry / "held_without_cluster.csv", _samples(HELD_HOST, None), cluster_column=False)
    # OWN_JOBS' hosts: alpha's copies naming alpha, beta's of the same host names (other readings) naming none.
    own = [line for host, (_, label) in OWN_JOBS.items() for line in _samples(host, "alpha", job=label)]
    _write(telemetry / "own_with_cluster.csv", own, cluster_column=True)
    others = [line for host, (_, label) in OWN_JOBS.items() for line in _samples(host, None, watts="80.0", job=label)]
    _write(telemetry / "own_hosts_namesakes_without_cluster.csv", others, cluster_column=False)
    assert partial_night(landing, warehouse, SECOND_NIGHT_SOURCES).code == 0
    return Nights(before, _figures(warehouse), _held(warehouse))


def test_unclaimed_samples_delivered_twice_count_once(nights):
    """The first night: each spare GPU's ten samples, delivered in two files of other bytes (and a third of the same
    bytes, which loads nothing), count once: 600 GPU-seconds each, 1,200 = 0.3333 GPU-hours, not 2,400."""
    assert nights.first["unattributed"] == [(MONTH, "idle", "no_job_on_host", 2 * MINUTES, 1200 / 3600)]
    # Per GPU: nine samples open 60 s each (540 s) and the days' two last samples (23:59 and 00:04), closed by the
    # mart: 23:59's by 00:00's 60 s, 00:04's by the nominal 60 s.
    assert nights.first["gpus"] == [(None, host, 0, MINUTES, 480, 2) for host in HOSTS]
    assert nights.first["shares"] == [(None, host, 0, "whole_gpu", 600) for host in HOSTS]


def test_unclaimed_samples_delivered_again_with_the_cluster_column_count_once(nights):
    """The next night: the copies naming alpha and those naming none are the same samples of one GPU each, alpha's,
    counted once: spare-02's 600 GPU-seconds, not an unnamed GPU's 600 beside alpha's. On spare-01, beta's GPU of the
    same name reports that day too, so the day names two clusters for spare-01's GPU 0: each copy naming none is alpha's
    by its instant (alpha's copy of that instant names alpha, beta's samples are 20 s later), not a third GPU. Three
    GPUs of 600 GPU-seconds: 1,800 = 0.5 GPU-hours of 30 samples, not 2,400 of 40; fct_gpu_shares says the same. With
    spare-04's and spare-05's two GPUs each (test_copies_naming_none_with_other_readings_are_another_gpu) the month
    holds 4,200 GPU-seconds of 70 samples on hosts no job held; and beta's spare-06 and spare-07 (a host of the same
    name as one alpha's jobs hold: test_a_copy_naming_no_cluster_that_measured_something_else_is_not_the_jobs)
    1,200 of 20."""
    assert nights.second["unattributed"] == [
        (MONTH, "idle", "another_host_of_the_same_name", 2 * MINUTES, 1200 / 3600),
        (MONTH, "idle", "no_job_on_host", 7 * MINUTES, 4200 / 3600),
    ]
    assert [gpu for gpu in nights.second["gpus"] if gpu[1] in HOSTS] == [
        ("alpha", "spare-01", 0, MINUTES, 480, 2),
        ("alpha", "spare-02", 0, MINUTES, 480, 2),
        ("beta", "spare-01", 0, MINUTES, 480, 2),
    ]
    assert [gpu for gpu in nights.second["shares"] if gpu[1] in HOSTS] == [
        ("alpha", "spare-01", 0, "whole_gpu", 600),
        ("alpha", "spare-02", 0, "whole_gpu", 600),
        ("beta", "spare-01", 0, "whole_gpu", 600),
    ]


def test_copies_naming_none_with_other_readings_are_another_gpu(nights):
    """The next night, spare-04: alpha's GPU 0 (100 W, its file naming no cluster) and beta's GPU 0 of the same host
    name (80 W, naming beta) report at the same ten instants. A copy naming none is a named copy delivered again only
    if it repeats its readings; these differ, so alpha's are another GPU, of no known cluster: two GPUs of 600
    GPU-seconds each, 1,200 in all, in int_unattributed_gpu_days and fct_gpu_shares alike, not beta's one GPU of 600
    with alpha's samples taken for copies of beta's (the figure before copy_verdicts). spare-05 alike: alpha's GPU at
    each minute, beta's 20 s later, and no copy naming none that is a named copy delivered again, so no evidence that
    alpha's are beta's GPU (delivered_again_gpus): two GPUs of 600 GPU-seconds, not beta's one GPU of about 620 with
    alpha's samples between its own."""
    for host in (TWIN_HOST, OFFSET_HOST):
        assert [gpu for gpu in nights.second["gpus"] if gpu[1] == host] == [
            (None, host, 0, MINUTES, 480, 2),
            ("beta", host, 0, MINUTES, 480, 2),
        ]
        assert [gpu for gpu in nights.second["shares"] if gpu[1] == host] == [
            (None, host, 0, "whole_gpu", 600),
            ("beta", host, 0, "whole_gpu", 600),
        ]


def test_unclaimed_copy_of_a_claimed_sample_is_the_claimed_sample(nights):
    """The next night, spare-03: its GPU 0's copies naming none are claimed by no job (two clusters' jobs hold a host
    spare-03), its copies naming alpha by alpha's job 7001. They are the same ten samples of one GPU, 7001's: 600
    GPU-seconds (0.1667 GPU-hours) in 7001's run, and none of it GPU time no job claims, nor a second, unnamed GPU in
    fct_gpu_shares (beside alpha's GPU held by 7001 for the same 600 s). beta's 7002 has no sample of its spare-03:
    its ten occupied minutes are unobserved."""
    hours = Decimal("0.1667")  # ten minutes, to four places
    assert nights.held["runs"] == [
        ("alpha", "7001", MINUTES, hours, hours, Decimal(0)),
        ("beta", "7002", 0, hours, Decimal(0), hours),
    ]
    assert nights.held["unattributed"] == []
    assert nights.held["shares"] == [
        ("alpha", f"alpha/7001@{START - timedelta(minutes=5):%Y-%m-%d %H:%M:%S}", "host_and_time", "whole_gpu", 600)
    ]


def test_a_copy_naming_no_cluster_that_measured_something_else_is_not_the_jobs(nights):
    """The next night, OWN_JOBS' hosts: alpha's job alone holds alpha's spare-06 (its samples found by host and time)
    and alpha's spare-07 (labelled 7004), and their GPU 0's copies naming alpha are its ten samples; beta's hosts of the
    same names report their GPU 0 at the same instants in a file without the cluster column, with other readings
    (80 W, not 100 W). A copy naming no cluster matches any job by host or by label, but one whose job's own copies of
    that sample (host, GPU, instant) name the job's cluster and measured something else is another host's GPU:
    GPU time no job claims (another_host_of_the_same_name), of no cluster. So 7003 and 7004 are what 7001's ten
    samples of one GPU over the same ten minutes give: ten samples, 0.1667 GPU-hours idle (fct_runs), one GPU of
    600 GPU-seconds and its cost in fct_gpu_shares; not a second GPU's samples added to the job's time (20 samples,
    0.3333 idle GPU-hours, two GPUs of 600 GPU-seconds each priced to the job: the figures before). And beta's two
    GPUs are 600 GPU-seconds each of no cluster, no job's, in int_unattributed_gpu_days and fct_gpu_shares, priced as
    alpha's GPUs beside them are."""
    hours = Decimal("0.1667")  # ten minutes, to four places
    ((_, *held), *own) = nights.held["own_runs"]
    assert [run[0] for run in own] == [job for job, _ in OWN_JOBS.values()]
    assert held == [MINUTES, hours, hours, Decimal(0)]
    assert [run[1:] for run in own] == [tuple(held)] * len(OWN_JOBS)
    ((_, *held_cost), *own_costs) = nights.held["own_costs"]
    assert held_cost[:2] == [1, 600] and held_cost[2] > 0
    assert [cost[1:] for cost in own_costs] == [tuple(held_cost)] * len(OWN_JOBS)
    assert nights.held["own_unnamed"] == [(host, None, "another_host_of_the_same_name", MINUTES) for host in OWN_JOBS]
    assert nights.held["own_unattributed"] == [(None, host, MINUTES, 480, 2) for host in OWN_JOBS]
    cost = held_cost[2]
    assert nights.held["own_shares"] == [
        (None, host, True, "another_host_of_the_same_name", 600, cost) for host in OWN_JOBS
    ] + [
        ("alpha", host, False, rule, 600, cost)
        for host, rule in zip(OWN_JOBS, ("host_and_time", "job_label"), strict=True)
    ]
