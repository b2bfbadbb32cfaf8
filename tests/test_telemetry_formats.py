"""Device samples as the tools sites run write them (I2): dcgm-exporter scrapes and Prometheus range queries.

Each file is loaded on its own into a temporary DuckDB warehouse through the source registry (no night is run).
The real samples under tests/data/dcgm and tests/data/prometheus are loaded unedited (origin and licence in their
README.md); none of them holds the profiling metrics the contract reads with a host label, so the files that do
are built here from the formats' documentation (dcgm-exporter's render template, Prometheus's HTTP API page).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.contract import Contract, load_contract
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_named
from cost_pipeline.ingest.telemetry import DCGM_SCRAPES

DATA = Path(__file__).parent / "data"
COUNTER = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # mJ since the driver loaded; optional, as the power draw
METRICS = {
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.93,
    "DCGM_FI_PROF_SM_ACTIVE": 0.81,
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.42,
    "DCGM_FI_PROF_NVLINK_TX_BYTES": 1.5e9,
    "DCGM_FI_PROF_NVLINK_RX_BYTES": 0.5e9,
    "DCGM_FI_DEV_POWER_USAGE": 650.5,
}


def _load(
    landing: Path, source: str, contract: Contract | None = None, options: object = None
) -> tuple[list[dict], list[tuple], dict]:
    """Every row of ``raw.<source>`` after ``landing`` is loaded (with the source's ``options``, its defaults unless
    given), the quarantine's (file, line, rule) and the ledger's (rows in, staged, quarantined) of each file."""
    con = connect(landing.parent / "w.duckdb", readable_dir=landing)
    try:
        load_named(con, landing, source, contract or load_contract(), options)
        cursor = con.execute(f"select * from raw.{source} order by source_file, source_line")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
        quarantined = con.execute("select source_file, line, rule from raw.quarantine order by 1, 2").fetchall()
        ledger = {
            f: (i, s, q)
            for f, i, s, q in con.execute(
                "select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files"
            ).fetchall()
        }
    finally:
        con.close()
    return rows, quarantined, ledger


def _telemetry(tmp_path: Path) -> Path:
    folder = tmp_path / "landing" / "telemetry"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _scrape_line(metric: str, gpu: int, value: object, labels: str, milliseconds: int | None = None) -> str:
    """One line as dcgm-exporter's render template writes it (internal/pkg/rendermetrics/render_metrics.go)."""
    stamp = "" if milliseconds is None else f" {milliseconds}"
    return (
        f'{metric}{{gpu="{gpu}",UUID="GPU-{gpu:08d}",pci_bus_id="00000000:0{gpu}:00.0",device="nvidia{gpu}",'
        f'modelName="NVIDIA H100 80GB HBM3",Hostname="node-01"{labels}}} {value}{stamp}'
    )


def _scrape(gpus: dict[int, str], milliseconds: int | None = None, metrics: dict[str, object] = METRICS) -> str:
    lines = []
    for metric in metrics:
        lines += [f"# HELP {metric} documented help text.", f"# TYPE {metric} gauge"]
        lines += [_scrape_line(metric, gpu, metrics[metric], labels, milliseconds) for gpu, labels in gpus.items()]
    return "\n".join(lines) + "\n"


def test_real_dcgm_exporter_output_loads_unedited(tmp_path):
    """NVIDIA's README scrapes (elided with ``...``) and the exporter's own render test output, byte for byte."""
    folder = _telemetry(tmp_path)
    for name in ("readme_standalone_scrape.prom", "readme_kubernetes_scrape.prom", "render_metrics_test_gpu.prom"):
        stem = name.removesuffix(".prom")
        shutil.copyfile(DATA / "dcgm" / name, folder / f"{stem}_2026-11-30T10-00-00Z.prom")
    rows, quarantined, ledger = _load(tmp_path / "landing", "device_samples_dcgm")
    # Clock, temperature and TEST_METRIC lines are not the metrics the contract reads: no samples, nothing lost.
    # The README's "..." lines (where NVIDIA cut the output) are not metric samples: each is named by its line.
    assert rows == []
    assert quarantined == [
        (f"telemetry/readme_{kind}_scrape_2026-11-30T10-00-00Z.prom", line, "exposition.line")
        for kind in ("kubernetes", "standalone")
        for line in (7, 11)
    ]
    assert ledger["telemetry/render_metrics_test_gpu_2026-11-30T10-00-00Z.prom"] == (0, 0, 0)


def test_real_prometheus_range_query_loads_unedited(tmp_path):
    """The range-query response of the Prometheus HTTP API page: a valid matrix of ``up``, so no device samples."""
    shutil.copyfile(DATA / "prometheus" / "query_range_up.json", _telemetry(tmp_path) / "query_range_up.json")
    rows, quarantined, ledger = _load(tmp_path / "landing", "device_samples_prometheus")
    assert rows == [] and quarantined == [] and ledger == {"telemetry/query_range_up.json": (0, 0, 0)}


def test_scrape_pivots_to_one_row_per_gpu_with_its_job(tmp_path):
    """Built from the render template: gpu 0 of an HPC job, gpu 1 of a Kubernetes pod, gpu 2 of no job."""
    gpus = {0: ',hpc_job="1234"', 1: ',container="main",namespace="ml",pod="b10-eval-cloud-x7k2p"', 2: ""}
    (_telemetry(tmp_path) / "node-01_2026-11-30T10-00-05Z.prom").write_text(_scrape(gpus), encoding="utf-8")
    rows, quarantined, _ = _load(tmp_path / "landing", "device_samples_dcgm")
    assert quarantined == []
    assert [(r["hostname"], r["gpu"], r["job_id"], str(r["timestamp"])) for r in rows] == [
        ("node-01", 0, "1234", "2026-11-30 10:00:05"),
        ("node-01", 1, "b10-eval-cloud", "2026-11-30 10:00:05"),
        ("node-01", 2, None, "2026-11-30 10:00:05"),
    ]
    assert all(r[m] == v for r in rows for m, v in METRICS.items())
    assert [r["source_line"] for r in rows] == [3, 4, 5]  # each GPU's first line


def test_a_workload_pod_relabelled_exported_pod_names_its_job_in_each_format(tmp_path):
    """kube-prometheus scrapes dcgm-exporter through a ServiceMonitor with honorLabels false: the exporter's own
    pod and namespace are the series' ``pod`` and ``namespace``, and the workload's are renamed ``exported_pod`` and
    ``exported_namespace``. The job is the workload's pod's (b10-eval-cloud), not the exporter's DaemonSet's."""
    folder = _telemetry(tmp_path)
    relabelled = {
        "pod": "nvidia-dcgm-exporter-7xk2p",
        "namespace": "gpu-operator",
        "exported_pod": "b10-eval-cloud-x7k2p",
        "exported_namespace": "ml",
        "exported_container": "main",
    }
    labels = "".join(f',{name}="{value}"' for name, value in relabelled.items())
    (folder / "node-01.prom").write_text(
        _scrape({0: labels, 1: ',pod="b7-train-ab3cd"'}, 1796032800000), encoding="utf-8"
    )
    series = [
        {"metric": {"__name__": metric, "gpu": "0", "Hostname": "node-01", **relabelled}, "values": [[1796032800, "1"]]}
        for metric in METRICS
    ]
    (folder / "node-01.json").write_text(_range_query(series), encoding="utf-8")
    loaded = {}
    for source in ("device_samples_dcgm", "device_samples_prometheus"):
        rows, quarantined, _ = _load(tmp_path / "landing", source)
        assert quarantined == []
        loaded[source] = [(r["gpu"], r["job_id"]) for r in rows]
    # A pod label beside no exported_pod is the workload's, as before (honor_labels true, or a standalone scrape).
    assert loaded == {
        "device_samples_dcgm": [(0, "b10-eval-cloud"), (1, "b7-train")],
        "device_samples_prometheus": [(0, "b10-eval-cloud")],
    }


def test_appended_scrapes_keep_their_own_timestamps(tmp_path):
    """Scrapes appended to one file, each line with its millisecond timestamp: one sample per GPU and scrape."""
    text = _scrape({0: ',hpc_job="7"'}, 1796032800000) + _scrape({0: ',hpc_job="7"'}, 1796032801500)
    (_telemetry(tmp_path) / "node-01.prom").write_text(text, encoding="utf-8")
    rows, quarantined, _ = _load(tmp_path / "landing", "device_samples_dcgm")
    assert quarantined == []
    assert [str(r["timestamp"]) for r in rows] == ["2026-11-30 10:00:00", "2026-11-30 10:00:01.500000"]


def test_malformed_lines_are_quarantined_with_file_line_and_rule(tmp_path):
    lines = _scrape({0: ',hpc_job="7"'}, 1796032800000).splitlines()
    lines[2] = lines[2].replace("} 0.93", "} zero")  # GR_ENGINE value of the only GPU
    lines.append("DCGM_FI_PROF_SM_ACTIVE{gpu=0} 0.5")  # unquoted label value: not the exposition format
    lines.append(_scrape_line("DCGM_FI_PROF_SM_ACTIVE", 3, 0.5, ""))  # no timestamp, and none in the file name
    (_telemetry(tmp_path) / "node-01.prom").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows, quarantined, ledger = _load(tmp_path / "landing", "device_samples_dcgm")
    file = "telemetry/node-01.prom"
    assert quarantined == [
        (file, 3, "exposition.value"),
        (file, 6, "DCGM_FI_PROF_GR_ENGINE_ACTIVE.present"),  # the GPU's sample lacks the metric that broke
        (file, 19, "exposition.line"),
        (file, 20, "exposition.timestamp"),
    ]
    assert rows == [] and ledger == {file: (4, 0, 4)}


def _range_query(series: list[dict]) -> str:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}, indent=1)


def test_range_query_series_pivot_to_one_sample_per_gpu_and_instant(tmp_path):
    """Built from the HTTP API page: one series per metric and GPU as dcgm-exporter's labels reach Prometheus."""
    series = [
        {
            "metric": {
                "__name__": metric,
                "gpu": str(gpu),
                "UUID": f"GPU-{gpu}",
                "Hostname": "node-02",
                "instance": "node-02:9400",
                "job": "dcgm-exporter",  # Prometheus's scrape job, not a scheduler job
                **({"hpc_job": "4300_3"} if gpu == 0 else {}),
            },
            "values": [[1796032800, str(value)], [1796032801.5, str(value)]],
        }
        for gpu in (0, 1)
        for metric, value in METRICS.items()
    ]
    (_telemetry(tmp_path) / "node-02_day.json").write_text(_range_query(series), encoding="utf-8")
    rows, quarantined, ledger = _load(tmp_path / "landing", "device_samples_prometheus")
    assert quarantined == [] and ledger == {"telemetry/node-02_day.json": (4, 4, 0)}
    assert [(r["gpu"], r["job_id"], str(r["timestamp"]), r["source_line"]) for r in rows] == [
        (0, "4300_3", "2026-11-30 10:00:00", 1),
        (0, "4300_3", "2026-11-30 10:00:01.500000", 2),
        (1, None, "2026-11-30 10:00:00", 13),
        (1, None, "2026-11-30 10:00:01.500000", 14),
    ]
    assert all(r[m] == v for r in rows for m, v in METRICS.items())


@pytest.mark.parametrize(
    ("content", "rule"),
    [
        ('{"status": "error", "errorType": "timeout", "error": "query timed out"}', "range_query.response"),
        ('{"status": "success", "data": {"resultType": "vector", "result": []}}', "range_query.response"),
        ("{not json", "range_query.response"),
    ],
)
def test_a_file_that_is_no_range_query_is_quarantined_whole(tmp_path, content, rule):
    (_telemetry(tmp_path) / "q.json").write_text(content, encoding="utf-8")
    rows, quarantined, _ = _load(tmp_path / "landing", "device_samples_prometheus")
    assert rows == [] and quarantined == [("telemetry/q.json", 0, rule)]


def test_a_bad_range_query_value_names_its_record(tmp_path):
    series = [
        {"metric": {"__name__": m, "gpu": "0", "Hostname": "n"}, "values": [[1796032800, "NaN" if i == 0 else "1"]]}
        for i, m in enumerate(["DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"])
    ]
    series[1]["values"].append([1796032801, "not a number"])
    (_telemetry(tmp_path) / "q.json").write_text(_range_query(series), encoding="utf-8")
    _, quarantined, _ = _load(tmp_path / "landing", "device_samples_prometheus")
    assert ("telemetry/q.json", 3, "range_query.value") in quarantined


def test_real_scrape_with_the_energy_counter_loads_unedited(tmp_path):
    """A Tesla T4's scrape served in Datadog's dcgm check environment, with the counter, byte for byte.

    It holds no profiling fields, so its one sample of a contract metric (power draw and energy counter of
    424773df46e0's GPU 0, from line 12) lacks the activity the tiers need: quarantined under that rule and not the
    counter's, which is a non-negative count of millijoules. The second host's fields are none the contract reads.
    """
    name = "datadog_serve_metrics_2026-11-30T10-00-00Z.prom"
    shutil.copyfile(DATA / "dcgm" / "datadog_serve_metrics.prom", _telemetry(tmp_path) / name)
    rows, quarantined, ledger = _load(tmp_path / "landing", "device_samples_dcgm")
    assert rows == []
    assert quarantined == [(f"telemetry/{name}", 12, "DCGM_FI_PROF_GR_ENGINE_ACTIVE.present")]
    assert ledger == {f"telemetry/{name}": (1, 0, 1)}
    # Read as the scrape reader reads it, before the rules: that sample carries the counter's reading.
    con = duckdb.connect()
    try:
        DCGM_SCRAPES.loader.stage(con, _telemetry(tmp_path) / name, [])
        staged = con.execute(
            f"select line, hostname, gpu, {DCGM_SCRAPES.loader.typed_select} from landing_rows"
        ).fetchall()
    finally:
        con.close()
    # ... and no MIG instance (GPU_I_ID, GPU_I_PROFILE): a sample of the whole GPU; no cluster label: none.
    assert [row[:3] + row[-5:] for row in staged] == [(12, "424773df46e0", "0", 8.969, 128996013, None, None, None)]


def test_the_energy_counter_loads_from_each_format_and_may_be_absent(tmp_path):
    """The counter as a scrape line, a range-query series and a wide column: a whole number of millijoules."""
    reading = 128996013  # the T4's reading in datadog_serve_metrics.prom
    with_counter = {**METRICS, COUNTER: reading}
    folder = _telemetry(tmp_path)
    (folder / "node-01_2026-11-30T10-00-05Z.prom").write_text(
        _scrape({0: ',hpc_job="7"', 1: ',hpc_job="7"'}, metrics=with_counter), encoding="utf-8"
    )
    series = [
        {"metric": {"__name__": metric, "gpu": "0", "Hostname": "node-02"}, "values": [[1796032800, str(value)]]}
        for metric, value in with_counter.items()
    ]
    (folder / "node-02.json").write_text(_range_query(series), encoding="utf-8")
    header = ",".join(["timestamp", "hostname", "gpu", "job_id", *METRICS, COUNTER])
    values = ",".join(str(v) for v in METRICS.values())
    (folder / "wide.csv").write_text(
        f"{header}\n2026-11-30T10:00:00,node-03,0,7,{values},{reading}\n"
        f"2026-11-30T10:01:00,node-03,0,7,{values},\n"  # not reported: null, as the power draw may be
        f"2026-11-30T10:02:00,node-03,0,7,{values},-5\n",
        encoding="utf-8",
    )
    (folder / "no_counter.csv").write_text(
        ",".join(["timestamp", "hostname", "gpu", "job_id", *METRICS])
        + f"\n2026-11-30T10:00:00,node-04,0,7,{values}\n",
        encoding="utf-8",
    )
    counters = {}
    for source in ("device_samples_dcgm", "device_samples_prometheus", "device_samples"):
        rows, quarantined, _ = _load(tmp_path / "landing", source)
        counters[source] = [(r["hostname"], r["gpu"], r[COUNTER]) for r in rows]
        if source == "device_samples":
            assert quarantined == [("telemetry/wide.csv", 4, f"{COUNTER}.non_negative")]
        else:
            assert quarantined == []
    assert counters == {
        "device_samples_dcgm": [("node-01", 0, reading), ("node-01", 1, reading)],
        "device_samples_prometheus": [("node-02", 0, reading)],
        "device_samples": [("node-04", 0, None), ("node-03", 0, reading), ("node-03", 0, None)],
    }


def test_a_deleted_scrape_keeps_its_samples_though_another_scrape_has_its_bytes(tmp_path):
    """An idle node's scrapes without timestamps can be byte for byte the same: the time in the name tells them
    apart. One deleted from the landing folder keeps its rows (raw is kept) and is named missing; it did not move
    to the other, whose time is another. Moved to a sub-folder under the same name, it did move: counted once."""
    folder = _telemetry(tmp_path)
    scrape = _scrape({0: ',hpc_job="1234"'})
    first, second = folder / "node-01_2026-11-30T10-00-00Z.prom", folder / "node-01_2026-11-30T10-01-00Z.prom"
    first.write_text(scrape, encoding="utf-8")
    second.write_text(scrape, encoding="utf-8")
    times = {"2026-11-30 10:00:00", "2026-11-30 10:01:00"}
    rows, _, _ = _load(tmp_path / "landing", "device_samples_dcgm")
    assert {str(r["timestamp"]) for r in rows} == times

    first.unlink()
    rows, _, ledger = _load(tmp_path / "landing", "device_samples_dcgm")
    assert {str(r["timestamp"]) for r in rows} == times
    assert set(ledger) == {"telemetry/node-01_2026-11-30T10-00-00Z.prom", "telemetry/node-01_2026-11-30T10-01-00Z.prom"}

    (folder / "rack-1").mkdir()
    second.rename(folder / "rack-1" / second.name)
    rows, _, _ = _load(tmp_path / "landing", "device_samples_dcgm")
    assert sorted(str(r["timestamp"]) for r in rows) == sorted(times)  # each instant once


def test_two_clusters_gpu_01_at_one_instant_are_two_samples_in_each_format(tmp_path):
    """Two clusters each have a gpu-01. The cluster is a label of the scrape or series (Prometheus's external
    label, relabelled onto dcgm-exporter's) and a column of the wide format: one file holding both clusters'
    GPU 0 at one instant has two samples, not a metric repeated, and a file that names no cluster loads it null."""
    folder = _telemetry(tmp_path)
    instant = 1796032800000
    gpus = {0: ',cluster="alpha"'}
    scrape = _scrape(gpus, instant) + _scrape({0: ',cluster="beta"'}, instant) + _scrape({1: ""}, instant)
    (folder / "gpu-01.prom").write_text(scrape.replace('Hostname="node-01"', 'Hostname="gpu-01"'), encoding="utf-8")
    series = [
        {
            "metric": {"__name__": metric, "gpu": "0", "Hostname": "gpu-01", **cluster},
            "values": [[instant / 1000, str(value)]],
        }
        for cluster in ({"cluster": "alpha"}, {"cluster": "beta"}, {})
        for metric, value in METRICS.items()
    ]
    (folder / "gpu-01.json").write_text(_range_query(series), encoding="utf-8")
    values = ",".join(str(v) for v in METRICS.values())
    (folder / "wide.csv").write_text(
        ",".join(["timestamp", "hostname", "gpu", "job_id", *METRICS, "cluster"]) + "\n"
        f"2026-11-30T10:00:00,gpu-01,0,,{values},alpha\n"
        f"2026-11-30T10:00:00,gpu-01,0,,{values},beta\n"
        f"2026-11-30T10:00:00,gpu-01,0,,{values},\n",
        encoding="utf-8",
    )
    loaded = {}
    files = {
        "device_samples_dcgm": "gpu-01.prom",
        "device_samples_prometheus": "gpu-01.json",
        "device_samples": "wide.csv",
    }
    for source, file in files.items():
        rows, quarantined, ledger = _load(tmp_path / "landing", source)
        assert quarantined == [] and ledger[f"telemetry/{file}"] == (3, 3, 0)
        loaded[source] = sorted((r["cluster"] or "", r["hostname"], r["gpu"], str(r["timestamp"])) for r in rows)
    at = "2026-11-30 10:00:00"
    assert loaded == {
        "device_samples_dcgm": [("", "gpu-01", 1, at), ("alpha", "gpu-01", 0, at), ("beta", "gpu-01", 0, at)],
        "device_samples_prometheus": [("", "gpu-01", 0, at), ("alpha", "gpu-01", 0, at), ("beta", "gpu-01", 0, at)],
        "device_samples": [("", "gpu-01", 0, at), ("alpha", "gpu-01", 0, at), ("beta", "gpu-01", 0, at)],
    }


def test_a_power_draw_in_milliwatts_is_quarantined_in_each_format(tmp_path):
    """NVML reports milliwatts: a 120 W GPU read as 120000 'watts' priced its energy 1,000 times (B-7's energy cost
    24.19 -> 24,188.81). No GPU board draws more than the contract's energy.max_gpu_power_watts (3,000 W): such a
    sample is quarantined by its line and rule in every format, and a site that raises the bound loads it."""
    folder = _telemetry(tmp_path)
    milliwatts = {**METRICS, "DCGM_FI_DEV_POWER_USAGE": 120000.0}
    (folder / "node-01.prom").write_text(
        _scrape({0: ',hpc_job="7"'}, 1796032800000) + _scrape({0: ',hpc_job="7"'}, 1796032860000, milliwatts),
        encoding="utf-8",
    )
    series = [
        {"metric": {"__name__": metric, "gpu": "0", "Hostname": "node-02"}, "values": [[1796032800, str(value)]]}
        for metric, value in milliwatts.items()
    ]
    (folder / "node-02.json").write_text(_range_query(series), encoding="utf-8")
    header = ",".join(["timestamp", "hostname", "gpu", "job_id", *METRICS])
    (folder / "wide.csv").write_text(
        f"{header}\n2026-11-30T10:00:00,node-03,0,7,{','.join(str(v) for v in METRICS.values())}\n"
        f"2026-11-30T10:01:00,node-03,0,7,{','.join(str(v) for v in milliwatts.values())}\n"
        f"2026-11-30T10:02:00,node-03,0,7,{','.join(str(v) for v in METRICS.values())[:-5]}3000\n",  # the bound
        encoding="utf-8",
    )
    rule = "DCGM_FI_DEV_POWER_USAGE.too_large"
    expected = {
        "device_samples_dcgm": ([650.5], [("telemetry/node-01.prom", 21, rule)]),
        "device_samples_prometheus": ([], [("telemetry/node-02.json", 1, rule)]),
        "device_samples": ([650.5, 3000.0], [("telemetry/wide.csv", 3, rule)]),
    }
    for source, (watts, quarantined) in expected.items():
        rows, rejected, _ = _load(tmp_path / "landing", source)
        rejected = [q for q in rejected if q[0] == quarantined[0][0]]  # one warehouse: every source's quarantine
        assert ([r["DCGM_FI_DEV_POWER_USAGE"] for r in rows], rejected) == (watts, quarantined)
    assert load_contract().max_gpu_power_watts == 3000
    document = load_contract().document
    larger = Contract("v1", {**document, "energy": {**document["energy"], "max_gpu_power_watts": 200000}})
    rows, rejected, _ = _load(tmp_path / "landing", "device_samples", larger)
    assert "telemetry/wide.csv" not in {q[0] for q in rejected}
    assert sorted(r["DCGM_FI_DEV_POWER_USAGE"] for r in rows) == [650.5, 3000.0, 120000.0]


def test_a_job_id_written_as_a_float_names_its_job_and_a_fraction_is_quarantined(tmp_path):
    """pandas writes an integer column with nulls as a double: a Parquet job_id of 2003.0 was the text '2003.0',
    matched no job, and B-8's 145.2 effective GPU-hours became 0.0 (its price per effective GPU-hour 3.00 -> 5.97).
    A whole number written with a point is the job's id, in Parquet and in CSV alike; a fraction, NaN or an infinity
    names no job: quarantined (job_id.whole_number). A null job id stays null (a sample without a job label)."""
    folder = _telemetry(tmp_path)
    values = ", ".join(f"{v} as {name}" for name, v in METRICS.items())
    job_ids = ["2003.0", "null", "2003.5", "'nan'", "'inf'", "'-inf'"]
    rows = " union all ".join(
        f"select timestamp '2026-11-30 10:0{i}:00' as timestamp, 'node-01' as hostname, 0 as gpu, "
        f"cast({job_id} as double) as job_id, {values}"
        for i, job_id in enumerate(job_ids)
    )
    con = duckdb.connect()
    try:
        con.execute(f"copy ({rows}) to '{folder / 'dcgm_rest.parquet'}' (format parquet)")
        assert con.execute(f"select typeof(job_id) from '{folder / 'dcgm_rest.parquet'}' limit 1").fetchone() == (
            "DOUBLE",
        )
    finally:
        con.close()
    header = ",".join(["timestamp", "hostname", "gpu", "job_id", *METRICS])
    metric_values = ",".join(str(v) for v in METRICS.values())
    (folder / "wide.csv").write_text(
        f"{header}\n"
        + "".join(
            f"2026-11-30T11:0{i}:00,node-02,0,{job_id},{metric_values}\n"
            for i, job_id in enumerate(["2003.0", "2003.00", " 2004 ", "2003.5", "train-b7", "1234_5", ""])
        ),
        encoding="utf-8",
    )
    rows, quarantined, ledger = _load(tmp_path / "landing", "device_samples")
    assert [(r["hostname"], r["job_id"]) for r in rows] == [
        ("node-01", "2003"),
        ("node-01", None),
        ("node-02", "2003"),
        ("node-02", "2003"),
        ("node-02", "2004"),
        ("node-02", "train-b7"),
        ("node-02", "1234_5"),
        ("node-02", None),
    ]
    rule = "job_id.whole_number"
    assert quarantined == [
        ("telemetry/dcgm_rest.parquet", 3, rule),
        ("telemetry/dcgm_rest.parquet", 4, rule),
        ("telemetry/dcgm_rest.parquet", 5, rule),
        ("telemetry/dcgm_rest.parquet", 6, rule),
        ("telemetry/wide.csv", 5, rule),
    ]
    assert ledger == {"telemetry/dcgm_rest.parquet": (6, 2, 4), "telemetry/wide.csv": (7, 6, 1)}
