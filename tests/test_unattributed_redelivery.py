"""GPU time no job claims counts each GPU once, whatever copies delivered its samples (docs/fractional_gpus.md,
``int_unattributed_gpu_days``): a file of unclaimed device samples delivered again (identical bytes, or the same
records in other bytes) and, a night later, exported again by its site with the ``cluster`` column added.

On a copy of the demo (whose samples all have their job: its ``fct_unattributed_gpu_hours`` is empty), two spare
hosts no allocation held, spare-01 and spare-02 of cluster alpha, report GPU 0 idle and unlabelled once a minute from
23:55 on 3 November to 00:04 on the 4th: ten samples each, each standing for the 60 s to its GPU's next (the last for
the nominal 60 s), 600 GPU-seconds a GPU. The first night's file names no cluster; the next night alpha's site
delivers the same samples again with the cluster column, and cluster beta, which has a host spare-01 too, delivers
its spare-01's GPU 0 idle at 20 s past each of the same minutes (its own 600 GPU-seconds) with its cluster named.
The nights run only the device samples' source and what it feeds (``partial_night``)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from tests.helpers import DEVICE_SAMPLES_HEADER, partial_night, query

pytestmark = pytest.mark.xdist_group("unattributed_redelivery")

SOURCES = [("raw", "device_samples")]
START = datetime(2026, 11, 3, 23, 55)
MONTH = date(2026, 11, 1)
MINUTES = 10
HOSTS = ("spare-01", "spare-02")


def _samples(host: str, cluster: str | None, seconds: int = 0) -> list[str]:
    """``host``'s GPU 0, idle and unlabelled, once a minute from START (``seconds`` past the minute), as the wide
    format writes it: the cluster column only when ``cluster`` is given."""
    lines = []
    for minute in range(MINUTES):
        at = (START + timedelta(minutes=minute, seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")
        line = f"{at},{host},0,,0.0,0.0,0.0,0.0,0.0,100.0"
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


@dataclass(frozen=True)
class Nights:
    """The two nights' figures: before alpha's export with the cluster column and beta's file, and after."""

    first: dict[str, list[tuple]]
    second: dict[str, list[tuple]]


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
    _write(telemetry / "beta.csv", _samples("spare-01", "beta", seconds=20), cluster_column=True)
    assert partial_night(landing, warehouse, SOURCES).code == 0
    return Nights(before, _figures(warehouse))


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
    GPUs of 600 GPU-seconds: 1,800 = 0.5 GPU-hours of 30 samples, not 2,400 of 40; fct_gpu_shares says the same."""
    assert nights.second["unattributed"] == [(MONTH, "idle", "no_job_on_host", 3 * MINUTES, 1800 / 3600)]
    assert nights.second["gpus"] == [
        ("alpha", "spare-01", 0, MINUTES, 480, 2),
        ("alpha", "spare-02", 0, MINUTES, 480, 2),
        ("beta", "spare-01", 0, MINUTES, 480, 2),
    ]
    assert nights.second["shares"] == [
        ("alpha", "spare-01", 0, "whole_gpu", 600),
        ("alpha", "spare-02", 0, "whole_gpu", 600),
        ("beta", "spare-01", 0, "whole_gpu", 600),
    ]
