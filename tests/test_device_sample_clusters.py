"""Two clusters may each have a host gpu-01, and Slurm numbers each cluster's jobs on its own: JobID 100 runs on
cluster alpha and on cluster beta at once. Device samples name their cluster (the wide format's cluster column, a
scrape's cluster label), and a GPU is its cluster, host and index: each job gets its own cluster's samples, by job
label and by host and time, and no sample of one cluster is a duplicate of the other's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from cost_pipeline.cli import run_pipeline
from tests.helpers import DEVICE_SAMPLES_HEADER, one_batch_landing, query

SACCT_HEADER = (
    "JobID|JobIDRaw|Cluster|State|Submit|Start|End|Elapsed|Timelimit|NNodes|NodeList|ReqTRES|AllocTRES|Comment"
)
START = datetime(2026, 11, 2, 1, 0, tzinfo=UTC)
MINUTES = 10
# (graphics engine, NVLink tx and rx, power in W) of an effective-compute sample (engine >= 0.2) and an idle one.
EFFECTIVE = (0.93, 1.5e9, 0.5e9, 400.0)
IDLE = (0.0, 0.0, 0.0, 100.0)


def _sacct(cluster: str) -> str:
    """Cluster ``cluster``'s JobID 100: one GPU of gpu-01 from 01:00 to 01:10."""
    job = (
        f"100|100|{cluster}|COMPLETED|2026-11-02T00:55:00|2026-11-02T01:00:00|2026-11-02T01:10:00|00:10:00|"
        "01:00:00|1|gpu-01|cpu=8,gres/gpu=1,node=1|cpu=8,gres/gpu=1,node=1|"
        "batch=B-1;phase=training;reason=planned_experiment"
    )
    return f"{SACCT_HEADER}\n{job}\n"


def _utilisation(cluster: str, minute: int) -> tuple[float, float, float, float]:
    """alpha computes throughout; beta idles for six minutes, then computes for four."""
    return EFFECTIVE if cluster == "alpha" or minute >= 6 else IDLE


def _wide_csv(label: str) -> str:
    """alpha's samples in the wide format, its cluster a column."""
    header = DEVICE_SAMPLES_HEADER + ",cluster"
    rows = []
    for minute in range(MINUTES):
        engine, tx, rx, watts = _utilisation("alpha", minute)
        at = (START + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%S")
        rows.append(f"{at},gpu-01,0,{label},{engine},{engine},0.4,{tx},{rx},{watts},alpha")
    return "\n".join([header, *rows]) + "\n"


def _scrape(label: str) -> str:
    """beta's samples as dcgm-exporter scrapes appended to one file, each line stamped, its cluster a label."""
    job = f',hpc_job="{label}"' if label else ""
    lines = []
    for minute in range(MINUTES):
        engine, tx, rx, watts = _utilisation("beta", minute)
        metrics = {
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE": engine,
            "DCGM_FI_PROF_SM_ACTIVE": engine,
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.4,
            "DCGM_FI_PROF_NVLINK_TX_BYTES": tx,
            "DCGM_FI_PROF_NVLINK_RX_BYTES": rx,
            "DCGM_FI_DEV_POWER_USAGE": watts,
        }
        stamp = int((START + timedelta(minutes=minute)).timestamp() * 1000)
        labels = f'gpu="0",UUID="GPU-00000000",Hostname="gpu-01",cluster="beta"{job}'
        lines += [f"{metric}{{{labels}}} {value} {stamp}" for metric, value in metrics.items()]
    return "\n".join(lines) + "\n"


# Labelled: both clusters' samples name JobID 100 (the label join). Unlabelled: by host and time (the host join).
@pytest.mark.parametrize("label", ["100", ""], ids=["job_label", "host_and_time"])
def test_two_clusters_gpu_01_each_job_gets_its_own_clusters_samples(tmp_path, label):
    landing = one_batch_landing(tmp_path)
    (landing / "telemetry").mkdir()
    warehouse = tmp_path / "warehouse.duckdb"
    # A night with both clusters' samples but only alpha's job (beta's export comes a night later): beta's samples
    # are nobody's, not alpha's JobID 100's on its gpu-01; the next night builds both jobs again as a new
    # warehouse would (beta's job overlaps alpha's window), and beta's samples leave the unattributed GPU time.
    (landing / "scheduler" / "sacct_alpha.txt").write_text(_sacct("alpha"), encoding="utf-8")
    (landing / "telemetry" / "alpha.csv").write_text(_wide_csv(label), encoding="utf-8")
    (landing / "telemetry" / "beta.prom").write_text(_scrape(label), encoding="utf-8")
    assert run_pipeline(landing, warehouse)
    reason = "label_names_no_running_job" if label else "no_job_on_host"
    assert query(warehouse, "select cluster, samples from marts.fct_runs") == [("alpha", 10)]
    assert query(
        warehouse, "select tier, reason, samples, gpu_hours from marts.fct_unattributed_gpu_hours order by 1"
    ) == [
        ("effective_compute", reason, 4, pytest.approx(240 / 3600)),
        ("idle", reason, 6, pytest.approx(360 / 3600)),
    ]
    (landing / "scheduler" / "sacct_beta.txt").write_text(_sacct("beta"), encoding="utf-8")
    assert run_pipeline(landing, warehouse)

    # Every sample loaded: rows in = staged + quarantined, nothing quarantined.
    assert query(
        warehouse,
        "select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files "
        "where source like 'device_samples%' order by 1",
    ) == [("telemetry/alpha.csv", 10, 10, 0), ("telemetry/beta.prom", 10, 10, 0)]
    runs = query(
        warehouse,
        "select cluster, samples, occupied_gpu_hours, effective_compute_gpu_hours, idle_gpu_hours, "
        "unobserved_gpu_hours from marts.fct_runs order by cluster",
    )
    # Each sample stands for the 60 s to its GPU's next sample (the last to the job's end at 01:10): each job's
    # GPU 600 GPU-seconds = 0.1667 GPU-hours, none unobserved. alpha's all effective compute; beta's six idle
    # minutes 360 s = 0.1 GPU-hours and four computing 240 s = 0.0667.
    assert runs == [
        ("alpha", 10, Decimal("0.1667"), Decimal("0.1667"), Decimal("0.0000"), Decimal("0.0000")),
        ("beta", 10, Decimal("0.1667"), Decimal("0.0667"), Decimal("0.1000"), Decimal("0.0000")),
    ]
    energy = query(
        warehouse,
        "select job_key, tier, energy_method, measured_samples, observed_gpu_seconds, gpu_kwh "
        "from intermediate.int_job_energy_measured order by 1, 2",
    )
    # Power x time: alpha 400 W x 600 s = 240,000 J = 0.0667 kWh; beta 100 W x 360 s = 36,000 J = 0.01 kWh idle and
    # 400 W x 240 s = 96,000 J = 0.0267 kWh computing.
    assert [
        (key.split("/")[0], tier, method, n, seconds, round(kwh, 6)) for key, tier, method, n, seconds, kwh in energy
    ] == [
        ("alpha", "effective_compute", "power", 10, 600, round(240_000 / 3_600_000, 6)),
        ("beta", "effective_compute", "power", 4, 240, round(96_000 / 3_600_000, 6)),
        ("beta", "idle", "power", 6, 360, round(36_000 / 3_600_000, 6)),
    ]
    # Each sample is its own cluster's job's, once.
    assert query(
        warehouse,
        "select source_file, attributed_job_key, attribution, count(*) from intermediate.int_device_samples_attributed "
        "group by all order by 1",
    ) == [
        ("telemetry/alpha.csv", "alpha/100@2026-11-02 00:55:00", "job_label" if label else "host_and_time", 10),
        ("telemetry/beta.prom", "beta/100@2026-11-02 00:55:00", "job_label" if label else "host_and_time", 10),
    ]
    # Each cluster's gpu-01 is a GPU of its own, held whole by its job: none shared, nothing unattributed.
    assert query(
        warehouse,
        "select cluster, hostname, gpu_index, job_key, share_rule, observed_hours, gpu_share from marts.fct_gpu_shares "
        "order by 1",
    ) == [
        ("alpha", "gpu-01", 0, "alpha/100@2026-11-02 00:55:00", "whole_gpu", pytest.approx(600 / 3600), 1.0),
        ("beta", "gpu-01", 0, "beta/100@2026-11-02 00:55:00", "whole_gpu", pytest.approx(600 / 3600), 1.0),
    ]
    assert query(warehouse, "select * from marts.fct_unattributed_gpu_hours") == []


def test_a_file_delivered_again_with_the_cluster_column_counts_each_sample_once(tmp_path):
    """A site adds the cluster column and delivers a day's file again: the sacct export names no cluster, so the job
    has none, and the copies that name cluster alpha are the same samples as those that name none (the same GPU of
    the same job at the same instant), not a second GPU: the job's GPU is measured once, within its occupied time. So
    are the samples no job claims (GPU 1 of gpu-01, labelled 999: no such job), in the GPU time no job claims and in
    the GPU shares alike, though the file delivered again holds only the first eight of them."""
    landing = one_batch_landing(tmp_path)
    (landing / "telemetry").mkdir()
    no_cluster = _sacct("alpha").replace("|Cluster|", "|").replace("|alpha|", "|")
    (landing / "scheduler" / "sacct.txt").write_text(no_cluster, encoding="utf-8")
    unclaimed = _wide_csv("999").replace(",gpu-01,0,", ",gpu-01,1,").split("\n", 1)[1]
    with_cluster = _wide_csv("100") + unclaimed
    without_cluster = "".join(
        line.removesuffix(",cluster").removesuffix(",alpha") + "\n" for line in with_cluster.splitlines()
    )
    with_cluster = "".join(line + "\n" for line in with_cluster.splitlines()[:-2])
    (landing / "telemetry" / "day.csv").write_text(without_cluster, encoding="utf-8")
    (landing / "telemetry" / "day_v2.csv").write_text(with_cluster, encoding="utf-8")
    warehouse = tmp_path / "warehouse.duckdb"
    assert run_pipeline(landing, warehouse)
    # Ten samples, each the 60 s to the next (the last to the job's end): 600 GPU-seconds = 0.1667 GPU-hours, not 20
    # samples and 0.3333 effective GPU-hours on a job that occupied 0.1667.
    assert query(
        warehouse,
        "select cluster, samples, occupied_gpu_hours, effective_compute_gpu_hours, unobserved_gpu_hours "
        "from marts.fct_runs",
    ) == [(None, 10, Decimal("0.1667"), Decimal("0.1667"), Decimal("0.0000"))]
    # The copy kept is the newest file's, of its named cluster.
    assert query(warehouse, "select cluster, count(*) from intermediate.int_device_samples_tiered group by all") == [
        ("alpha", 10)
    ]
    # One GPU, alpha's, held whole by the job for 0.1667 hours: not alpha's and an unnamed one at 0.1667 each (0.3333
    # GPU-hours, and twice the GPU cost, for a job that ran 0.1667). GPU 1 likewise, held by no job: its two samples
    # only in the file naming no cluster are alpha's GPU's too (the cluster its other unclaimed copies that day name),
    # as in the GPU time no job claims, not an unnamed GPU 1 beside alpha's.
    hours = pytest.approx(600 / 3600)
    assert query(
        warehouse,
        "select cluster, hostname, gpu_index, job_key is null, share_rule, observed_hours, gpu_hours, gpu_month_hours "
        "from marts.fct_gpu_shares order by gpu_index",
    ) == [
        ("alpha", "gpu-01", 0, False, "whole_gpu", hours, hours, hours),
        ("alpha", "gpu-01", 1, True, "whole_gpu", hours, hours, hours),
    ]
    # GPU 1's time no job claims, once: ten samples, each the 60 s to the next (the last the nominal 60 s), 0.1667
    # GPU-hours, not 20 samples and 0.3333 (an unnamed GPU 1 beside alpha's).
    assert query(warehouse, "select tier, reason, samples, gpu_hours from marts.fct_unattributed_gpu_hours") == [
        ("effective_compute", "label_names_no_running_job", 10, hours)
    ]
