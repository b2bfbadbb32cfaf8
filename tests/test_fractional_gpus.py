"""Fractional GPUs (docs/fractional_gpus.md): MIG instances and shared GPUs, as dcgm-exporter writes them.

Each file is loaded on its own into a temporary DuckDB warehouse through the source registry (no night is run). No
licensed repository file holds a real MIG scrape (NVIDIA pastes them in issues), so the scrapes are built from
dcgm-exporter's render template (internal/pkg/rendermetrics/render_metrics.go: GPU_I_PROFILE and GPU_I_ID after
modelName, then Hostname) with the label layout of the MIG output in NVIDIA/dcgm-exporter issue #512. The money
(each GPU's instances, jobs and unallocated slices priced to the cent) is the dbt unit test
fractional_gpus_reconcile_to_the_cent (models/marts/finance/_finance__unit_tests.yml), run by
tests/test_dbt_unit_tests.py.
"""

from __future__ import annotations

import copy

import pytest

from cost_pipeline.contract import Contract, load_contract
from tests.test_telemetry_formats import METRICS, _load, _range_query, _telemetry

ACTIVITY = {name: value for name, value in METRICS.items() if name != "DCGM_FI_DEV_POWER_USAGE"}


def _mig_line(metric: str, gpu: int, instance: int, profile: str, value: object, extra: str) -> str:
    return (
        f'{metric}{{gpu="{gpu}",UUID="GPU-58e8f5ea-13cc-013a-d88f-2bcf5ae8bc7{gpu}",pci_bus_id="00000000:1A:00.0",'
        f'device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",GPU_I_PROFILE="{profile}",GPU_I_ID="{instance}",'
        f'Hostname="gsrh100-074",DCGM_FI_DRIVER_VERSION="535.129.03"{extra}}} {value}'
    )


def _mig_scrape(instances: list[tuple[int, int, str, str]]) -> str:
    lines = []
    for metric, value in ACTIVITY.items():
        lines += [f"# HELP {metric} documented help text.", f"# TYPE {metric} gauge"]
        lines += [_mig_line(metric, gpu, i, profile, value, extra) for gpu, i, profile, extra in instances]
    return "\n".join(lines) + "\n"


def test_mig_instances_of_one_gpu_are_samples_of_their_own(tmp_path):
    """Three instances of GPU 0 at one instant: two pods and one instance no pod holds; one pod holds two."""
    pod = ',container="kserve-container",namespace="ml",pod="{}"'
    instances = [
        (0, 7, "1g.10gb", pod.format("embed-predictor-vdtjl")),
        (0, 8, "1g.10gb", ""),
        (0, 9, "3g.40gb", pod.format("tts-predictor-8j8pl")),
        (0, 10, "2g.20gb", pod.format("tts-predictor-8j8pl")),
    ]
    name = "gsrh100-074_2026-11-30T10-00-05Z.prom"
    (_telemetry(tmp_path) / name).write_text(_mig_scrape(instances), encoding="utf-8")
    rows, quarantined, _ = _load(tmp_path / "landing", "device_samples_dcgm")
    assert quarantined == []
    assert [(r["gpu"], r["gpu_instance_id"], r["gpu_instance_profile"], r["job_id"]) for r in rows] == [
        (0, 7, "1g.10gb", "embed-predictor"),
        (0, 8, "1g.10gb", None),
        (0, 9, "3g.40gb", "tts-predictor"),
        (0, 10, "2g.20gb", "tts-predictor"),
    ]
    assert all(r["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] == METRICS["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] for r in rows)


def test_jobs_sharing_one_gpu_are_one_sample_each(tmp_path):
    """Time-slicing: two HPC jobs on GPU 1 at one instant are two samples of the whole GPU (no instance)."""
    lines = []
    for metric, value in ACTIVITY.items():
        for job in ("1234", "1235"):
            lines.append(
                f'{metric}{{gpu="1",UUID="GPU-1",device="nvidia1",modelName="NVIDIA A100-SXM4-80GB",'
                f'Hostname="node-01",hpc_job="{job}"}} {value}'
            )
    (_telemetry(tmp_path) / "node-01_2026-11-30T10-00-05Z.prom").write_text("\n".join(lines) + "\n", "utf-8")
    rows, quarantined, _ = _load(tmp_path / "landing", "device_samples_dcgm")
    assert quarantined == []
    assert [(r["gpu"], r["gpu_instance_id"], r["job_id"]) for r in rows] == [(1, None, "1234"), (1, None, "1235")]


def test_range_query_series_of_two_instances_are_two_samples(tmp_path):
    """Prometheus keeps dcgm-exporter's GPU_I_ID and GPU_I_PROFILE labels: one job on two instances of GPU 0."""
    series = [
        {
            "metric": {
                "__name__": metric,
                "gpu": "0",
                "UUID": "GPU-0",
                "GPU_I_PROFILE": profile,
                "GPU_I_ID": instance,
                "Hostname": "node-02",
                "hpc_job": "4300",
            },
            "values": [[1796032800, str(value)]],
        }
        for instance, profile in (("1", "4g.40gb"), ("2", "3g.40gb"))
        for metric, value in ACTIVITY.items()
    ]
    (_telemetry(tmp_path) / "node-02_day.json").write_text(_range_query(series), encoding="utf-8")
    rows, quarantined, _ = _load(tmp_path / "landing", "device_samples_prometheus")
    assert quarantined == []
    assert [(r["gpu_instance_id"], r["gpu_instance_profile"], r["job_id"]) for r in rows] == [
        (1, "4g.40gb", "4300"),
        (2, "3g.40gb", "4300"),
    ]


def test_wide_samples_name_their_instance_or_are_quarantined(tmp_path):
    """The wide CSV's optional columns: a MIG sample loads; a profile without slices, or half a pair, does not."""
    header = "timestamp,hostname,gpu,job_id," + ",".join(METRICS) + ",gpu_instance_id,gpu_instance_profile"
    values = ",".join(str(v) for v in METRICS.values())
    body = [
        f"2026-11-30T10:00:00Z,node-01,0,1234,{values},3,3g.40gb",
        f"2026-11-30T10:00:00Z,node-01,0,1235,{values},4,mig-3.40gb",
        f"2026-11-30T10:00:00Z,node-01,0,1236,{values},5,",
        f"2026-11-30T10:00:00Z,node-01,1,1237,{values},,",
    ]
    (_telemetry(tmp_path) / "samples.csv").write_text("\n".join([header, *body]) + "\n", encoding="utf-8")
    rows, quarantined, _ = _load(tmp_path / "landing", "device_samples")
    assert [(r["job_id"], r["gpu_instance_id"], r["gpu_instance_profile"]) for r in rows] == [
        ("1234", 3, "3g.40gb"),
        ("1237", None, None),
    ]
    assert quarantined == [
        ("telemetry/samples.csv", 3, "gpu_instance_profile.format"),
        ("telemetry/samples.csv", 4, "gpu_instance.paired"),
    ]


def test_a_contract_asking_for_activity_shares_is_refused():
    """No input carries per-process activity, so by_activity cannot be computed: the contract says so."""
    document = {
        **load_contract().document,
        "fractional_gpus": {"mig_total_slices": 7, "shared_gpu_rule": "by_activity"},
    }
    with pytest.raises(ValueError, match="per-process activity"):
        Contract(version="v1", document=document).parameter_rows()
    assert load_contract().fractional_gpus == (7, "equal")


_SACCT_HEADER = "JobID|State|Submit|Start|End|Timelimit|NNodes|NodeList|ReqTRES|AllocTRES|Comment"
_SHARD_JOB = (
    "7001|COMPLETED|2026-11-20T00:00:00|2026-11-20T00:00:00|2026-11-20T01:00:00|01:00:00|1|gpu-s|"
    "billing=4,cpu=4,gres/shard=2,mem=16G,node=1|billing=4,cpu=4,gres/shard=2,mem=16G,node=1|"
    "batch=B-7;phase=exploration"
)
_MPS_JOB = (
    "7002|COMPLETED|2026-11-20T00:00:00|2026-11-20T00:00:00|2026-11-20T01:00:00|01:00:00|1|gpu-s|"
    "billing=4,cpu=4,gres/mps=50,mem=16G,node=1|billing=4,cpu=4,gres/mps=50,mem=16G,node=1|"
    "batch=B-7;phase=exploration"
)


def _load_sacct(tmp_path, contract: Contract) -> tuple[list[dict], list[tuple]]:
    from cost_pipeline.ingest.lib.warehouse import connect
    from cost_pipeline.ingest.registry import load_named

    landing = tmp_path / "landing"
    (landing / "scheduler").mkdir(parents=True, exist_ok=True)
    (landing / "scheduler" / "sacct_shards.txt").write_text(
        f"{_SACCT_HEADER}\n{_SHARD_JOB}\n{_MPS_JOB}\n", encoding="utf-8"
    )
    con = connect(tmp_path / "w.duckdb", readable_dir=landing)
    try:
        load_named(con, landing, "scheduler_jobs", contract)
        cursor = con.execute(
            "select job_id, gpus_allocated, shards_allocated, mps_allocated from raw.scheduler_jobs order by job_id"
        )
        rows = [dict(zip([d[0] for d in cursor.description], r, strict=True)) for r in cursor.fetchall()]
        quarantined = con.execute("select line, rule, message from raw.quarantine order by line").fetchall()
    finally:
        con.close()
    return rows, quarantined


def test_slurm_gpu_shards_and_mps_are_refused_until_the_contract_says_how_many_make_a_gpu(tmp_path):
    """A job on Slurm's GPU sharding (gres/shard=2) or CUDA MPS (gres/mps=50), with no gres/gpu, would hold no GPU
    and cost nothing: its row is quarantined, naming the contract setting, until fractional_gpus.slurm_shards_per_gpu
    (slurm_mps_per_gpu) is stated; then it loads with its count (int_jobs_attributed prices it as that share of a
    GPU, a dbt unit test)."""
    rows, quarantined = _load_sacct(tmp_path / "a", load_contract())
    assert rows == []
    assert [(line, rule) for line, rule, _ in quarantined] == [
        (2, "shards_requested.shards_per_gpu_in_contract"),
        (3, "mps_requested.mps_per_gpu_in_contract"),
    ]
    assert "fractional_gpus.slurm_shards_per_gpu" in quarantined[0][2]
    assert "fractional_gpus.slurm_mps_per_gpu" in quarantined[1][2]
    document = copy.deepcopy(load_contract().document)
    document["fractional_gpus"].update(slurm_shards_per_gpu=8, slurm_mps_per_gpu=100)
    contract = Contract(version="v1", document=document)
    rows, quarantined = _load_sacct(tmp_path / "b", contract)
    assert quarantined == []
    assert rows == [
        {"job_id": "7001", "gpus_allocated": 0, "shards_allocated": 2, "mps_allocated": 0},
        {"job_id": "7002", "gpus_allocated": 0, "shards_allocated": 0, "mps_allocated": 50},
    ]
    parameters = {row["name"]: row["value"] for row in contract.parameter_rows()}
    assert (parameters["slurm_shards_per_gpu"], parameters["slurm_mps_per_gpu"]) == (8.0, 100.0)
