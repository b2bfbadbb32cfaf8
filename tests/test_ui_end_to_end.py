"""The Dagster UI and the statement as a person uses them (issue 11), in headless Chromium.

``dagster dev`` runs on loopback over a copy of the demo night (its warehouse, landing folder and Dagster home). A
browser opens the asset graph (Dagster's first-visit dialog is off, so nothing covers it), launches one asset's
materialisation from its page and sees the run succeed, in the UI and in the instance. Then it renders
``cost-pipeline report``'s statement from a file:// address with every other request refused, and checks that the
figures it shows equal the marts and that its charts are drawn.

The browser is Debian's ``chromium`` (``.ci/run`` installs it when missing), driven by Playwright from PyPI through
``executable_path``: nothing is downloaded. Without it the test is skipped, saying so. Screenshots of each page are
kept as the run's artefacts in ``test-artifacts/ui/`` (``COST_TEST_ARTIFACTS`` names another folder), each run's
replacing the last.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from decimal import Decimal
from pathlib import Path

import dagster as dg
import pytest
from playwright import sync_api

from cost_pipeline.cli import main
from cost_pipeline.definitions import defs
from tests.servers import dequeue_quickly, graphql, local_dagster

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
ASSET = dg.AssetKey(["raw", "batch_registry"])
ARTIFACTS = Path(os.environ.get("COST_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "ui"
# Generous bounds for a loaded 2-core machine; a healthy run needs a fraction of each.
RUN_FINISH_S, UI_WAIT_MS = 240, 120_000

if not CHROMIUM.exists():
    pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run does)", allow_module_level=True)


@pytest.fixture
def browser():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


def test_launching_an_asset_from_the_ui_runs_it(demo_copy, browser, tmp_path, monkeypatch):
    """`cost-pipeline ui` starts `dagster dev` in the Dagster home beside the warehouse: the CLI night's history."""
    night = demo_copy
    home = night / "warehouse.dagster"
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    log = tmp_path / "dagster-dev.log"
    ui = [str(Path(sys.executable).parent / "cost-pipeline"), "ui", "--landing", str(night / "landing")]
    dequeue_quickly(home)  # the launched run starts sooner
    with local_dagster([*ui, "--warehouse", str(night / "warehouse.duckdb")], {}, log) as url:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            before = {run.run_id for run in instance.get_runs()}
        # The UI shows the CLI's night: its run is in the server's run history.
        runs = graphql(url, "{ runsOrError { ... on Runs { results { runId } } } }")["runsOrError"]["results"]
        assert before and before <= {run["runId"] for run in runs}
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(UI_WAIT_MS)

        page.goto(f"{url}/asset-groups")  # the global asset lineage: every materialisable asset, by group
        page.get_by_text(f"Materialize all ({len(defs.resolve_asset_graph().materializable_asset_keys)})").wait_for()
        page.screenshot(path=ARTIFACTS / "asset-graph.png")

        page.goto(f"{url}/assets/{ASSET.to_user_string()}")
        materialize = page.locator("button", has_text=re.compile(r"^Materialize$"))
        materialize.click()
        launched = page.get_by_text(re.compile(r"Launched run [0-9a-f]{8}"))
        launched.wait_for()
        short_id = launched.inner_text().split()[-1]
        page.screenshot(path=ARTIFACTS / "launched.png")

        deadline, run = time.monotonic() + RUN_FINISH_S, None
        while time.monotonic() < deadline:
            with dg.DagsterInstance.from_config(str(home)) as instance:
                (run,) = [r for r in instance.get_runs() if r.run_id not in before]
                if run.is_finished:
                    latest = instance.get_latest_materialization_event(ASSET)
                    break
            time.sleep(1)
        assert run is not None and run.run_id.startswith(short_id)
        assert run.status == dg.DagsterRunStatus.SUCCESS, log.read_text()[-3000:]
        assert run.asset_selection == {ASSET}
        assert latest is not None and latest.run_id == run.run_id

        page.goto(f"{url}/runs/{run.run_id}")
        page.get_by_text("Success", exact=True).first.wait_for()
        page.screenshot(path=ARTIFACTS / "run.png")
        # Dagster's first-visit dialog (its newsletter sign-up) is off in the home beside the warehouse: it never
        # covered a page of this visit, and the server says it will not.
        assert not page.get_by_text("Join the Dagster community").is_visible()
        assert graphql(url, "{ shouldShowNux }") == {"shouldShowNux": False}


def test_the_statement_shows_the_marts_figures_and_draws_its_charts(demo_run, browser, tmp_path):
    warehouse, statement = tmp_path / "warehouse.duckdb", tmp_path / "statement.html"
    shutil.copyfile(demo_run.warehouse, warehouse)
    assert main(["report", "--warehouse", str(warehouse), "--out", str(statement), "--batch", "B-7"]) == 0

    page = browser.new_page(viewport={"width": 1200, "height": 900})
    refused: list[str] = []

    def offline(route) -> None:  # the statement works offline: anything but its own file is refused
        if route.request.url == statement.as_uri():
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", offline)
    page.goto(statement.as_uri())
    page.screenshot(path=ARTIFACTS / "statement.png", full_page=True)
    assert refused == []

    cells = page.eval_on_selector_all(
        "table[data-section=batch_costs] td[data-figure]",
        "cells => cells.map(c => [c.dataset.figure, c.dataset.value, c.innerText])",
    )
    costs = demo_run.row("select * from marts.fct_batch_costs where batch_id = 'B-7'")
    shown = {figure: (value, text) for figure, value, text in cells}
    for column in ("compute_cost", "storage_cost", "labour_cost", "services_cost", "total_cost", "total_cost_low"):
        value, text = shown[column]
        assert Decimal(value) == costs[column], column
        assert text == f"{costs[column]:,.2f} {costs['currency']}", (column, text)  # as the browser lays it out

    charts = page.eval_on_selector_all(
        "svg[data-chart]",
        """charts => charts.map(c => {
            const box = c.getBoundingClientRect();
            const bars = [...c.querySelectorAll('rect[data-bar]')].map(r => [r.dataset.value, r.getBBox().width]);
            return [c.dataset.chart, box.width, box.height, bars];
        })""",
    )
    drawn = {name: (width, height, bars) for name, width, height, bars in charts}
    assert {"gpu_hours", "utilisation_tiers", "cost_history"} <= set(drawn)
    for name, (width, height, bars) in drawn.items():
        assert width > 0 and height > 0, name
        assert bars and all(w >= 0 for _, w in bars), name
        widest = max(bars, key=lambda bar: Decimal(bar[0]))
        assert widest[1] > 0, name  # the largest bar is visible, as laid out by the browser
