"""Two clusters may each have a host gpu-01, and Slurm numbers each cluster's jobs on its own: JobID 100 runs on
cluster alpha and on cluster beta at once. Device samples name their cluster (the wide format's cluster column, a
scrape's cluster label), and a GPU is its cluster, host and index: each job gets its own cluster's samples, by job
label and by host and time, and no sample of one cluster is a duplicate of the other's."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from cost_pipeline.cli import run_pipeline
from tests.helpers import DEVICE_SAMPLES_HEADER, one_batch_landing, query

# The tests share two nights (the fixture nights): on one worker.
pytestmark = pytest.mark.xdist_group("device_sample_clusters")

SACCT_HEADER = (
    "JobID|JobIDRaw|Cluster|State|Submit|Start|End|Elapsed|Timelimit|NNodes|NodeList|ReqTRES|AllocTRES|Comment"
)
MINUTES = 10
# (graphics engine, NVLink tx and rx, power in W) of an effective-compute sample (engine >= 0.2) and an idle one.
EFFECTIVE = (0.93, 1.5e9, 0.5e9, 400.0)
IDLE = (0.0, 0.0, 0.0, 100.0)


@dataclass(frozen=True)
class Clusters:
    """One scenario of the shared nights: two clusters (the first computes throughout, the second idles six minutes
    of ten) each running JobID ``job`` on its own ``host`` from ``start`` for ten minutes, on a day and in a month of
    the scenario's own, its samples labelled with the job or not."""

    first: str
    second: str
    job: str
    start: datetime
    labelled: bool
    host: str = "gpu-01"

    @property
    def month(self) -> date:
        return self.start.date().replace(day=1)

    def job_key(self, cluster: str) -> str:
        return f"{cluster}/{self.job}@{self.start - timedelta(minutes=5):%Y-%m-%d %H:%M:%S}"

    @property
    def files(self) -> tuple[str, str]:
        return f"telemetry/{self.first}.csv", f"telemetry/{self.second}.prom"


# Labelled: both clusters' samples name JobID 100 (the label join). Unlabelled: by host and time (the host join).
# The two share their nights, each in its own month, clusters and job id: neither's samples can reach the other's
# jobs, nor its GPUs.
SCENARIOS = {
    "job_label": Clusters("alpha", "beta", "100", datetime(2026, 11, 2, 1, 0, tzinfo=UTC), labelled=True),
    "host_and_time": Clusters("delta", "gamma", "200", datetime(2026, 12, 2, 1, 0, tzinfo=UTC), labelled=False),
}
# test_a_file_delivered_again_with_the_cluster_column_counts_each_sample_once: its job (JobID 300, no cluster), day
# and host, in the first of the shared nights, a month before the others. A host of its own: a GPU's last sample of a
# day stands for the time to the same GPU's next one (capped), which job_label's alpha gpu-01 would give it.
AGAIN = Clusters("alpha", "", "300", datetime(2026, 10, 2, 1, 0, tzinfo=UTC), labelled=True, host="gpu-03")


def _sacct(cluster: str, scenario: Clusters) -> str:
    """Cluster ``cluster``'s JobID of ``scenario``: one GPU of its host for ten minutes from the scenario's start."""
    day = f"{scenario.start:%Y-%m-%d}"
    job = (
        f"{scenario.job}|{scenario.job}|{cluster}|COMPLETED|{day}T00:55:00|{day}T01:00:00|{day}T01:10:00|00:10:00|"
        f"01:00:00|1|{scenario.host}|cpu=8,gres/gpu=1,node=1|cpu=8,gres/gpu=1,node=1|"
        "batch=B-1;phase=training;reason=planned_experiment"
    )
    return f"{SACCT_HEADER}\n{job}\n"


def _utilisation(first: bool, minute: int) -> tuple[float, float, float, float]:
    """The first cluster computes throughout; the second idles for six minutes, then computes for four."""
    return EFFECTIVE if first or minute >= 6 else IDLE


def _wide_csv(label: str, scenario: Clusters) -> str:
    """The first cluster's samples in the wide format, its cluster a column."""
    header = DEVICE_SAMPLES_HEADER + ",cluster"
    rows = []
    for minute in range(MINUTES):
        engine, tx, rx, watts = _utilisation(True, minute)
        at = (scenario.start + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%S")
        rows.append(f"{at},{scenario.host},0,{label},{engine},{engine},0.4,{tx},{rx},{watts},{scenario.first}")
    return "\n".join([header, *rows]) + "\n"


def _scrape(label: str, scenario: Clusters) -> str:
    """The second cluster's samples as dcgm-exporter scrapes appended to one file, each line stamped, its cluster a
    label."""
    job = f',hpc_job="{label}"' if label else ""
    lines = []
    for minute in range(MINUTES):
        engine, tx, rx, watts = _utilisation(False, minute)
        metrics = {
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE": engine,
            "DCGM_FI_PROF_SM_ACTIVE": engine,
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.4,
            "DCGM_FI_PROF_NVLINK_TX_BYTES": tx,
            "DCGM_FI_PROF_NVLINK_RX_BYTES": rx,
            "DCGM_FI_DEV_POWER_USAGE": watts,
        }
        stamp = int((scenario.start + timedelta(minutes=minute)).timestamp() * 1000)
        labels = f'gpu="0",UUID="GPU-00000000",Hostname="{scenario.host}",cluster="{scenario.second}"{job}'
        lines += [f"{metric}{{{labels}}} {value} {stamp}" for metric, value in metrics.items()]
    return "\n".join(lines) + "\n"


def _deliver_the_day_again_with_the_cluster_column(landing: Path) -> None:
    """AGAIN's day: the sacct export names no cluster; the day's samples (JobID 300's GPU 0, and GPU 1 labelled 999: no
    such job) in a file naming none, delivered again with the cluster column (alpha) but the last two of GPU 1."""
    no_cluster = _sacct(AGAIN.first, AGAIN).replace("|Cluster|", "|").replace(f"|{AGAIN.first}|", "|")
    (landing / "scheduler" / "sacct.txt").write_text(no_cluster, encoding="utf-8")
    unclaimed = _wide_csv("999", AGAIN).replace(f",{AGAIN.host},0,", f",{AGAIN.host},1,").split("\n", 1)[1]
    with_cluster = _wide_csv(AGAIN.job, AGAIN) + unclaimed
    without_cluster = "".join(
        line.removesuffix(",cluster").removesuffix(",alpha") + "\n" for line in with_cluster.splitlines()
    )
    with_cluster = "".join(line + "\n" for line in with_cluster.splitlines()[:-2])
    (landing / "telemetry" / "day.csv").write_text(without_cluster, encoding="utf-8")
    (landing / "telemetry" / "day_v2.csv").write_text(with_cluster, encoding="utf-8")


@dataclass(frozen=True)
class Nights:
    """The shared nights: the warehouse as the first left it (a copy) and as the second left it."""

    first: Path
    second: Path


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> Nights:
    """A night with each scenario's two clusters' samples but only its first cluster's job (the second's export comes
    a night later), and AGAIN's day; then the next night with the second clusters' jobs too."""
    tmp_path = tmp_path_factory.mktemp("device_sample_clusters")
    landing = one_batch_landing(tmp_path)
    (landing / "telemetry").mkdir()
    warehouse = tmp_path / "warehouse.duckdb"
    for scenario in SCENARIOS.values():
        label = scenario.job if scenario.labelled else ""
        (landing / "scheduler" / f"sacct_{scenario.first}.txt").write_text(
            _sacct(scenario.first, scenario), encoding="utf-8"
        )
        (landing / scenario.files[0]).write_text(_wide_csv(label, scenario), encoding="utf-8")
        (landing / scenario.files[1]).write_text(_scrape(label, scenario), encoding="utf-8")
    _deliver_the_day_again_with_the_cluster_column(landing)
    assert run_pipeline(landing, warehouse)
    first = tmp_path / "first_night.duckdb"
    shutil.copyfile(warehouse, first)
    for scenario in SCENARIOS.values():
        (landing / "scheduler" / f"sacct_{scenario.second}.txt").write_text(
            _sacct(scenario.second, scenario), encoding="utf-8"
        )
    assert run_pipeline(landing, warehouse)
    return Nights(first, warehouse)


@pytest.mark.parametrize("name", list(SCENARIOS), ids=list(SCENARIOS))
def test_two_clusters_gpu_01_each_job_gets_its_own_clusters_samples(nights, name):
    s = SCENARIOS[name]
    alpha, beta, month = s.first, s.second, s.month
    # A night with both clusters' samples but only alpha's job (beta's export comes a night later): beta's samples
    # are nobody's, not alpha's JobID 100's on its gpu-01; the next night builds both jobs again as a new
    # warehouse would (beta's job overlaps alpha's window), and beta's samples leave the unattributed GPU time.
    # (alpha and beta: the scenario's first and second clusters; JobID 100: its job.)
    reason = "label_names_no_running_job" if s.labelled else "no_job_on_host"
    assert query(nights.first, "select cluster, samples from marts.fct_runs where job_id = ?", [s.job]) == [(alpha, 10)]
    assert query(
        nights.first,
        "select tier, reason, samples, gpu_hours from marts.fct_unattributed_gpu_hours where sample_month = ? "
        "order by 1",
        [month],
    ) == [
        ("effective_compute", reason, 4, pytest.approx(240 / 3600)),
        ("idle", reason, 6, pytest.approx(360 / 3600)),
    ]
    warehouse = nights.second

    # Every sample loaded: rows in = staged + quarantined, nothing quarantined.
    assert query(
        warehouse,
        "select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files "
        "where source like 'device_samples%' and source_file in (?, ?) order by 1",
        list(s.files),
    ) == [(s.files[0], 10, 10, 0), (s.files[1], 10, 10, 0)]
    runs = query(
        warehouse,
        "select cluster, samples, occupied_gpu_hours, effective_compute_gpu_hours, idle_gpu_hours, "
        "unobserved_gpu_hours from marts.fct_runs where job_id = ? order by cluster",
        [s.job],
    )
    # Each sample stands for the 60 s to its GPU's next sample (the last to the job's end at 01:10): each job's
    # GPU 600 GPU-seconds = 0.1667 GPU-hours, none unobserved. alpha's all effective compute; beta's six idle
    # minutes 360 s = 0.1 GPU-hours and four computing 240 s = 0.0667.
    assert runs == [
        (alpha, 10, Decimal("0.1667"), Decimal("0.1667"), Decimal("0.0000"), Decimal("0.0000")),
        (beta, 10, Decimal("0.1667"), Decimal("0.0667"), Decimal("0.1000"), Decimal("0.0000")),
    ]
    energy = query(
        warehouse,
        "select job_key, tier, energy_method, measured_samples, observed_gpu_seconds, gpu_kwh "
        "from intermediate.int_job_energy_measured where month_start = ? order by 1, 2",
        [month],
    )
    # Power x time: alpha 400 W x 600 s = 240,000 J = 0.0667 kWh; beta 100 W x 360 s = 36,000 J = 0.01 kWh idle and
    # 400 W x 240 s = 96,000 J = 0.0267 kWh computing.
    assert [
        (key.split("/")[0], tier, method, n, seconds, round(kwh, 6)) for key, tier, method, n, seconds, kwh in energy
    ] == [
        (alpha, "effective_compute", "power", 10, 600, round(240_000 / 3_600_000, 6)),
        (beta, "effective_compute", "power", 4, 240, round(96_000 / 3_600_000, 6)),
        (beta, "idle", "power", 6, 360, round(36_000 / 3_600_000, 6)),
    ]
    # Each sample is its own cluster's job's, once.
    assert query(
        warehouse,
        "select source_file, attributed_job_key, attribution, count(*) from intermediate.int_device_samples_attributed "
        "where source_file in (?, ?) group by all order by 1",
        list(s.files),
    ) == [
        (s.files[0], s.job_key(alpha), "job_label" if s.labelled else "host_and_time", 10),
        (s.files[1], s.job_key(beta), "job_label" if s.labelled else "host_and_time", 10),
    ]
    # Each cluster's gpu-01 is a GPU of its own, held whole by its job: none shared, nothing unattributed.
    assert query(
        warehouse,
        "select cluster, hostname, gpu_index, job_key, share_rule, observed_hours, gpu_share from marts.fct_gpu_shares "
        "where sample_month = ? order by 1",
        [month],
    ) == [
        (alpha, "gpu-01", 0, s.job_key(alpha), "whole_gpu", pytest.approx(600 / 3600), 1.0),
        (beta, "gpu-01", 0, s.job_key(beta), "whole_gpu", pytest.approx(600 / 3600), 1.0),
    ]
    assert query(warehouse, "select * from marts.fct_unattributed_gpu_hours where sample_month = ?", [month]) == []


def test_a_file_delivered_again_with_the_cluster_column_counts_each_sample_once(nights):
    """A site adds the cluster column and delivers a day's file again: the sacct export names no cluster, so the job
    has none, and the copies that name cluster alpha are the same samples as those that name none (the same GPU of
    the same job at the same instant), not a second GPU: the job's GPU is measured once, within its occupied time. So
    are the samples no job claims (GPU 1 of the host, labelled 999: no such job), in the GPU time no job claims and in
    the GPU shares alike, though the file delivered again holds only the first eight of them (AGAIN's day, in the
    first of the shared nights)."""
    warehouse, month = nights.first, AGAIN.month
    # Ten samples, each the 60 s to the next (the last to the job's end): 600 GPU-seconds = 0.1667 GPU-hours, not 20
    # samples and 0.3333 effective GPU-hours on a job that occupied 0.1667.
    assert query(
        warehouse,
        "select cluster, samples, occupied_gpu_hours, effective_compute_gpu_hours, unobserved_gpu_hours "
        "from marts.fct_runs where job_id = ?",
        [AGAIN.job],
    ) == [(None, 10, Decimal("0.1667"), Decimal("0.1667"), Decimal("0.0000"))]
    # The copy kept is the newest file's, of its named cluster.
    assert query(
        warehouse,
        "select cluster, count(*) from intermediate.int_device_samples_tiered "
        "where sampled_at >= ? and sampled_at < ? group by all",
        [month, SCENARIOS["job_label"].month],
    ) == [("alpha", 10)]
    # One GPU, alpha's, held whole by the job for 0.1667 hours: not alpha's and an unnamed one at 0.1667 each (0.3333
    # GPU-hours, and twice the GPU cost, for a job that ran 0.1667). GPU 1 likewise, held by no job: its two samples
    # only in the file naming no cluster are alpha's GPU's too (the cluster its other unclaimed copies that day name),
    # as in the GPU time no job claims, not an unnamed GPU 1 beside alpha's.
    hours = pytest.approx(600 / 3600)
    assert query(
        warehouse,
        "select cluster, hostname, gpu_index, job_key is null, share_rule, observed_hours, gpu_hours, gpu_month_hours "
        "from marts.fct_gpu_shares where sample_month = ? order by gpu_index",
        [month],
    ) == [
        ("alpha", AGAIN.host, 0, False, "whole_gpu", hours, hours, hours),
        ("alpha", AGAIN.host, 1, True, "whole_gpu", hours, hours, hours),
    ]
    # GPU 1's time no job claims, once: ten samples, each the 60 s to the next (the last the nominal 60 s), 0.1667
    # GPU-hours, not 20 samples and 0.3333 (an unnamed GPU 1 beside alpha's).
    assert query(
        warehouse,
        "select tier, reason, samples, gpu_hours from marts.fct_unattributed_gpu_hours where sample_month = ?",
        [month],
    ) == [("effective_compute", "label_names_no_running_job", 10, hours)]
