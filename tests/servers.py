"""A local Dagster UI for a test: ``dagster dev`` or ``dg dev`` on loopback, on a free port, stopped afterwards."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START_S = 180  # a generous bound for a loaded 2-core machine; a healthy start takes 10-30 s
# The daemon takes a queued run off the queue every 5 s unless told otherwise: every 1 s in a test's home, so a run
# launched from the UI, a sensor or a backfill starts sooner. Only how often it looks changes: the home's own
# dagster.yaml (one run at a time, cost_pipeline.dagster_home.INSTANCE_YAML) still decides how many runs it starts.
QUICK_DEQUEUE = """
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
"""


def dequeue_quickly(home: Path) -> None:
    """The Dagster home ``home``'s queue is looked at every second (``QUICK_DEQUEUE`` added to its dagster.yaml)."""
    configured = home / "dagster.yaml"
    configured.write_text(configured.read_text(encoding="utf-8") + QUICK_DEQUEUE, encoding="utf-8")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def local_dagster(command: list[str], env: dict[str, str], log: Path) -> Iterator[str]:
    """Start ``command`` (``dagster dev ...`` or ``dg dev``) from the project root with ``--host 127.0.0.1 --port
    <free>`` and ``env`` over this process's environment; yield its URL once it answers; stop it and its children
    (webserver, daemon, code server: one process group) at the end."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [*command, "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_S
        while True:
            assert server.poll() is None, f"{command} exited with {server.returncode}:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, (
                f"{command} did not answer within {START_S} s:\n{log.read_text()[-3000:]}"
            )
            try:
                with urllib.request.urlopen(f"{url}/server_info", timeout=5):
                    break
            except OSError:
                time.sleep(1)
        yield url
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()


def graphql(url: str, query: str) -> dict:
    """The ``data`` of a GraphQL query to the UI's server."""
    request = urllib.request.Request(
        f"{url}/graphql", json.dumps({"query": query}).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["data"]
