"""Where the Dagster instance of a warehouse lives: one run history for CLI runs, schedule ticks and UI runs.

``DAGSTER_HOME`` when it is set; otherwise ``<warehouse folder>/<warehouse stem>.dagster/`` beside the warehouse
(``demo/warehouse.dagster/`` for the demo). Point ``dagster dev`` at the same folder (docs/operations.md) and the UI
shows the CLI's runs, and checks that compare with the previous materialisation (``quarantine_not_growing``) see
the previous night whoever launched it.

The home beside the warehouse gets a ``dagster.yaml`` that queues runs one at a time (``INSTANCE_YAML``) when it
has none: every run writes the one warehouse, so a sensor's run that starts during the night waits for it instead
of failing on the run lock. A ``dagster.yaml`` that is there (edited, say) and a ``DAGSTER_HOME`` someone set up are
left as they are.

The instance this module opens writes its event log through ``cost_pipeline.event_log`` (the same files as
Dagster's own SQLite storage, written a third of a night faster), unless ``dagster.yaml`` names a storage of its
own.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import yaml
from dagster._core.instance.ref import InstanceRef

# The last asset of a night: materialised after the marts were rebuilt (or, after a failed build, some of them:
# its metadata's stale_marts then names those kept; published_as_of skips such a publication).
LAST_ASSET = dg.AssetKey(["published", "marts"])

INSTANCE_YAML = """\
# Written by cost_pipeline into the Dagster home beside the warehouse: runs write one warehouse, so they queue one at a
# time (the run lock refuses a second writer). Edit freely; cost_pipeline never rewrites this file.
concurrency:
  runs:
    max_concurrent_runs: 1
# Nothing leaves this machine: Dagster's anonymous usage statistics are off, and so is the UI's first-visit dialog
# (it asks for an e-mail address for Dagster's newsletter, and covers the page until dismissed).
telemetry:
  enabled: false
nux:
  enabled: false
"""


def dagster_home(warehouse: Path) -> Path:
    """``DAGSTER_HOME`` if set, else the folder beside ``warehouse``."""
    configured = os.environ.get("DAGSTER_HOME")
    if configured:
        return Path(configured)
    warehouse = Path(warehouse).resolve()
    return warehouse.with_name(f"{warehouse.stem}.dagster")


@contextlib.contextmanager
def warehouse_instance(warehouse: Path) -> Iterator[dg.DagsterInstance]:
    """The persistent Dagster instance of ``warehouse`` (its folder is created on first use)."""
    home = dagster_home(warehouse)
    home.mkdir(parents=True, exist_ok=True)
    if not os.environ.get("DAGSTER_HOME") and not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text(INSTANCE_YAML, encoding="utf-8")
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), overrides=_event_log_override(home))) as instance:
        yield instance


STORAGE_KEYS = ("storage", "run_storage", "event_log_storage", "schedule_storage")


def _event_log_override(home: Path) -> dict:
    """``event_log_storage`` set to the kept-connection storage on Dagster's default folder, unless ``dagster.yaml``
    configures storage itself."""
    configured = home / "dagster.yaml"
    settings = yaml.safe_load(configured.read_text(encoding="utf-8")) if configured.exists() else None
    if isinstance(settings, dict) and any(key in settings for key in STORAGE_KEYS):
        return {}
    return {
        "event_log_storage": {
            "module": "cost_pipeline.event_log",
            "class": "KeptConnectionEventLogStorage",
            "config": {"base_dir": str(home / "history" / "runs")},
        }
    }


def last_good_night(warehouse: Path) -> datetime | None:
    """When the marts of ``warehouse`` were last all published, i.e. the end of its last night that succeeded."""
    if not dagster_home(warehouse).is_dir():
        return None
    with warehouse_instance(warehouse) as instance:
        return published_as_of(instance)


def published_as_of(instance: dg.DagsterInstance) -> datetime | None:
    """The ``as_of`` of the last publication of ``instance`` with every mart rebuilt (every published row carries
    it; a publication after a failed build keeps some marts' last copy, ``stale_marts``); None: never."""
    cursor = None
    while True:
        page = instance.fetch_materializations(LAST_ASSET, limit=100, cursor=cursor)
        for record in page.records:
            metadata = record.asset_materialization.metadata if record.asset_materialization else {}
            if metadata.get("stale_marts") is not None and metadata["stale_marts"].value:
                continue
            stamped = metadata.get("as_of")
            return (
                datetime.fromisoformat(stamped.value)
                if stamped is not None
                else datetime.fromtimestamp(record.timestamp, UTC)
            )
        if not page.has_more:
            return None
        cursor = page.cursor
