"""Device samples written as metric series (one value per metric, GPU and instant), pivoted inside DuckDB.

dcgm-exporter scrapes (Prometheus text exposition) and Prometheus/Thanos range-query responses both hold one value
per line or record: ``DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",hostname="node-01",hpc_job="1234"} 0.93``. Each reader
(``telemetry.py``) turns its file into ``landing_series`` -- one row per value, with its line (or record) number, the
metric name, the scrape instant, cluster (null: none named), host, GPU, MIG instance and profile (null: the whole
GPU), job and the value, and the first line rule it broke -- and ``pivot`` turns that into ``landing_rows``, the shape
of the wide format: one row per cluster, host, GPU, instance, job and instant, with one column per metric, numbered
by the first line that contributed to it. A line that broke a line rule stays a row of its own (its metric columns
empty) so that the quarantine names its own file, line and rule. Only the metrics the contract reads are rows; the
dozens of other fields an exporter serves are not samples and are not counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import duckdb

from cost_pipeline.contract.schemas import DEVICE_SAMPLE_COLUMNS, DEVICE_SAMPLE_OPTIONAL
from cost_pipeline.ingest.lib.in_database import Rule, trimmed_sql
from cost_pipeline.ingest.lib.warehouse import quote

METRICS = tuple(name for name, _ in DEVICE_SAMPLE_COLUMNS if name.startswith("DCGM_FI_"))
# A MIG instance (GPU_I_ID, GPU_I_PROFILE) is a device of its own: the instances of one GPU report at one instant.
# Several files staged together (``landing_file``: a file's position among them) are pivoted each on its own. The
# cluster is part of a GPU's name: gpu-01 of two clusters in one response is two GPUs, not a metric repeated.
_KEYS = (
    "landing_file",
    "timestamp",
    "cluster",
    "hostname",
    "gpu",
    "gpu_instance_id",
    "gpu_instance_profile",
    "job_id",
)


# The job a sample's labels name: DCGM's HPC job mapping (hpc_job), else the Kubernetes Job that owns the pod
# (the Job controller names its pods <job name>-<5 random characters>; the scheduler events name the Job). An Indexed
# Job's pods are <job name>-<completion index>-<5 random characters>: their label keeps the index (train-b7-3), and
# int_device_samples_attributed gives it to the Job when no job of that very name ran then (it knows the jobs).
# Scraped by a Prometheus that does not honour the exporter's labels (honor_labels: false, kube-prometheus's
# ServiceMonitor default), the workload's pod label is renamed exported_pod, and pod is the exporter's own pod
# (nvidia-dcgm-exporter-7xk2p): exported_pod, when present, is the workload's.
def job_from_labels(label: Callable[[str], str]) -> str:
    """The SQL expression of a sample's job; ``label(name)`` is the SQL expression of the label ``name``'s value."""
    job = trimmed_sql(label("hpc_job"))
    workload_pod = f"coalesce(nullif({label('exported_pod')}, ''), {label('pod')}, '')"
    return f"coalesce(nullif({job}, ''), nullif(regexp_extract({workload_pod}, '^(.+)-[a-z0-9]{{5}}$', 1), ''))"


def line_rules(rules: Sequence[tuple[str, str]]) -> list[Rule]:
    """The line rules (rule, message) as contract rules over ``landing_rows.line_rule``."""
    return [(rule, f"line_rule = '{rule}'", message) for rule, message in rules]


def pivot(con: duckdb.DuckDBPyConnection, repeated_rule: str) -> None:
    """``landing_series`` -> ``landing_rows``: one row per host, GPU, job and instant; broken lines on their own.

    A metric given twice for one GPU and instant (scrapes appended without their timestamps, or two series that
    differ only in a label the samples do not keep) keeps its first line; the later ones break ``repeated_rule``.
    """
    metric_columns = ", ".join(f"max(case when metric = '{m}' then value end) as {quote(m)}" for m in METRICS)
    empty_metrics = ", ".join(f"cast(null as varchar) as {quote(m)}" for m in METRICS)
    keys = ", ".join(quote(k) for k in _KEYS)
    known = ", ".join(f"'{m}'" for m in METRICS)
    con.execute(
        f"""
        create or replace temp table landing_rows as
        with kept as (
            select *, row_number() over (partition by {keys}, metric order by line) as copy
            from landing_series where line_rule is null and metric in ({known})
        )
        select min(line) as line, {keys}, {metric_columns}, cast(null as varchar) as line_rule
        from kept where copy = 1 group by all
        union all
        select line, {keys}, {empty_metrics}, '{repeated_rule}' from kept where copy > 1
        union all
        select line, {keys}, {empty_metrics}, line_rule from landing_series where line_rule is not null
        """
    )
    con.execute("drop table if exists landing_series")


def presence_rules() -> list[Rule]:
    """A pivoted sample must carry every metric the contract requires (power draw and energy counter may be missing)."""
    return [
        (
            f"{m}.present",
            f"line_rule is null and {quote(m)} is null",
            f"no {m} value for this GPU and instant (is the field among the counters the exporter collects?)",
        )
        for m in METRICS
        if m not in DEVICE_SAMPLE_OPTIONAL
    ]
