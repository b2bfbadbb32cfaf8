"""One sensor per landing source (``<source>_files``): a run when files with new bytes land in its folder.

Each tick hashes (sha256) every file of the source in the landing folder (the ``landing`` resource's, the same
folder the ingest reads, by the registry's patterns and companions). The cursor is the set of those hashes, not the
names: a renamed file changes nothing and starts nothing; a file whose bytes are new (a new export, a changed one)
starts one run of the source's raw asset and everything downstream of it (its dbt models, their tests, the
published marts), so other sources are not re-read and the UI shows which source started it. The first tick of a
sensor with no cursor records what is there without a run: starting a sensor is no delivery.

The run key names the source, the number of the delivery and a digest of the new hashes: a tick evaluated again
with the same cursor never launches twice, and bytes that come back after a change are a new delivery.
A file is hashed again only when its size, modification time or inode changed since the sensor process last hashed
it (``_FileHashes``), so a tick over a large telemetry folder costs a ``stat`` per unchanged file, as in rsync.
The sensors start stopped (docs/operations.md says how to start them).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from cost_pipeline.defs.resources import LandingZone
from cost_pipeline.ingest.lib.records import file_sha256, refusal
from cost_pipeline.ingest.lib.source import Source
from cost_pipeline.ingest.registry import SOURCES

# Hashing every file of a large source (telemetry) takes a while: look every two minutes at most.
INTERVAL_SECONDS = 120


@dataclass(frozen=True)
class Seen:
    """A sensor's cursor: the sha256 of every file of its source at the last tick, and how many deliveries ran."""

    hashes: frozenset[str]
    deliveries: int = 0

    def dump(self) -> str:
        return json.dumps({"deliveries": self.deliveries, "sha256": sorted(self.hashes)}, separators=(",", ":"))

    @classmethod
    def load(cls, cursor: str | None) -> Seen | None:
        if not cursor:
            return None
        document = json.loads(cursor)
        return cls(frozenset(document["sha256"]), int(document["deliveries"]))


class _FileHashes:
    """sha256 per file, kept while the file's (inode, size, mtime) stays the same; files no longer seen are dropped.

    A file modified less than ``RACY_SECONDS`` before it was hashed is hashed again at the next tick (as git does
    with "racily clean" entries): a file system's clock is coarse, and a rewrite of the same size within one of its
    ticks keeps the modification time.
    """

    RACY_SECONDS = 2

    def __init__(self) -> None:
        self._known: dict[Path, tuple[tuple[int, int, int], str]] = {}

    def of(self, paths: list[Path]) -> frozenset[str]:
        known: dict[Path, tuple[tuple[int, int, int], str]] = {}
        racy_after = time.time_ns() - self.RACY_SECONDS * 1_000_000_000
        for path in paths:
            status = path.stat()
            stamp = (status.st_ino, status.st_size, status.st_mtime_ns)
            cached = self._known.get(path)
            known[path] = cached if cached is not None and cached[0] == stamp else (stamp, file_sha256(path))
            if status.st_mtime_ns >= racy_after:
                known[path] = ((0, -1, 0), known[path][1])  # hashed, but not trusted at the next tick
        self._known = known
        return frozenset(digest for _, digest in known.values())


_FILE_HASHES: dict[tuple[Path, str], _FileHashes] = {}  # per landing folder and source


def source_hashes(landing_dir: Path, source: Source) -> frozenset[str]:
    """The sha256 of every file the source reads in the landing folder (entries it would refuse are skipped)."""
    paths = [path for path in sorted(source.claims(landing_dir)) if refusal(path, landing_dir) is None]
    return _FILE_HASHES.setdefault((landing_dir, source.name), _FileHashes()).of(paths)


def run_key(source: str, delivery: int, new: frozenset[str]) -> str:
    """``<source>:<delivery>:<sha256 of the new hashes, sorted and joined>``."""
    digest = hashlib.sha256(",".join(sorted(new)).encode()).hexdigest()
    return f"{source}:{delivery}:{digest}"


def files_sensor(source: Source) -> dg.SensorDefinition:
    """The sensor of one source's landing files."""
    key = dg.AssetKey(["raw", source.name])

    @dg.sensor(
        name=f"{source.name}_files",
        description=f"Runs raw/{source.name} and everything downstream when a file with new bytes lands in "
        f"{source.files_text()} (by sha256: a renamed file starts nothing).",
        # The monthly deliverables are partitioned: the monthly_after_nightly sensor refreshes them.
        target=dg.AssetSelection.assets(key).downstream() - dg.AssetSelection.groups("monthly"),
        minimum_interval_seconds=INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.STOPPED,
    )
    def _files(context: dg.SensorEvaluationContext, landing: LandingZone) -> dg.SensorResult:
        hashes = source_hashes(landing.root, source)
        seen = Seen.load(context.cursor)
        if seen is None:
            return dg.SensorResult(
                skip_reason=f"first look: {len(hashes)} file(s) of {source.name} recorded",
                cursor=Seen(hashes).dump(),
            )
        new = hashes - seen.hashes
        if not new:
            return dg.SensorResult(
                skip_reason=f"no new bytes in {source.name}'s files", cursor=Seen(hashes, seen.deliveries).dump()
            )
        delivery = seen.deliveries + 1
        return dg.SensorResult(
            run_requests=[
                dg.RunRequest(
                    run_key=run_key(source.name, delivery, new),
                    tags={"cost_pipeline/source": source.name, "cost_pipeline/new_files": str(len(new))},
                )
            ],
            cursor=Seen(hashes, delivery).dump(),
        )

    return _files


landing_sensors: list[dg.SensorDefinition] = [files_sensor(source) for source in SOURCES.values()]
