"""``cost-pipeline report --batch`` / ``--team``: the HTML statement's figures are the marts', its charts are drawn
from them, it works offline, and an unknown batch or team is a wrong argument (exit 2).

The statements are written once per module, from a copy of the session's demo warehouse, and read back with
``html.parser``: every figure cell carries ``data-figure`` (the mart column) and ``data-value`` (its exact value).
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cost_pipeline.cli import main
from cost_pipeline.statement import BAR_AREA

pytestmark = pytest.mark.xdist_group("statement")


class _Figures(HTMLParser):
    """(table section, row, figure) -> (exact value, shown text), and every chart's bars as (key, value, width)."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[tuple[str, str, str], tuple[str, str]] = {}
        self.charts: dict[str, list[tuple[str, Decimal, Decimal]]] = {}
        self._section = self._row = self._chart = ""
        self._open: tuple[str, str, str, str] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._section = a.get("data-section") or ""
        elif tag == "tr":
            self._row = a.get("data-row") or ""
        elif tag == "svg":
            self._chart = a["data-chart"]
            self.charts[self._chart] = []
        elif tag == "rect":
            self.charts[self._chart].append((a["data-bar"], Decimal(a["data-value"]), Decimal(a["width"])))
        if "data-figure" in a:
            self._open = (self._section, self._row, a["data-figure"], a["data-value"])
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._open is not None and tag in ("td", "span"):
            section, row, figure, value = self._open
            self.figures[(section, row, figure)] = (value, "".join(self._text).strip())
            self._open = None

    def value(self, section: str, row: str, figure: str) -> Decimal | None:
        text = self.figures[(section, row, figure)][0]
        return None if text == "" else Decimal(text)


@dataclass(frozen=True)
class Statements:
    warehouse: Path
    batch: str
    batch_figures: _Figures
    december: _Figures
    team: str
    team_figures: _Figures


def _read(path: Path) -> _Figures:
    parser = _Figures()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def statements(demo_run, tmp_path_factory) -> Statements:
    assert demo_run.succeeded
    root = tmp_path_factory.mktemp("statement")
    warehouse = root / "warehouse.duckdb"
    shutil.copyfile(demo_run.warehouse, warehouse)
    paths = {name: root / f"{name}.html" for name in ("batch", "december", "team")}
    base = ["report", "--warehouse", str(warehouse), "--out"]
    assert main([*base, str(paths["batch"]), "--batch", "B-7"]) == 0
    assert main([*base, str(paths["december"]), "--batch", "B-7", "--month", "2026-12"]) == 0
    assert main([*base, str(paths["team"]), "--team", "post-training", "--month", "2026-11"]) == 0
    return Statements(
        warehouse, "B-7", _read(paths["batch"]), _read(paths["december"]), "post-training", _read(paths["team"])
    )


def test_batch_figures_equal_the_marts(statements, demo_run):
    s, b = statements.batch_figures, statements.batch
    costs = demo_run.row("select * from marts.fct_batch_costs where batch_id = ?", [b])
    assert s.value("bill_total", "amount", "amount") == costs["total_cost"]
    assert s.value("bill_total", "amount_low", "amount_low") == costs["total_cost_low"]
    assert s.value("bill_total", "amount_high", "amount_high") == costs["total_cost_high"]
    assert s.figures[("bill_total", "amount", "amount")][1] == f"{costs['total_cost']:,.2f} {costs['currency']}"
    for column in ("compute_cost", "storage_cost", "labour_cost", "services_cost", "rerun_cost", "total_cost"):
        assert s.value("batch_costs", column, column) == costs[column], column
    for cost_type in ("compute", "storage", "labour", "services"):
        assert s.value("bill_by_cost_type", cost_type, "amount") == costs[f"{cost_type}_cost"], cost_type
    for level in ("billed", "measured", "assumed", "pending"):
        assert s.value("bill_by_evidence_level", level, "amount") == costs[f"{level}_cost"], level
    for by in ("phase", "cost_type", "evidence_level"):
        lines = demo_run.query(
            f"select {by}, sum(amount), sum(amount_low), sum(amount_high) from marts.fct_cost_lines "
            f"where batch_id = ? group by {by}",
            [b],
        )
        assert len(lines) > 1, by
        for key, amount, low, high in lines:
            section = f"bill_by_{by}"
            assert s.value(section, key, "amount") == amount, (by, key)
            assert (s.value(section, key, "amount_low"), s.value(section, key, "amount_high")) == (low, high), (by, key)

    compute = demo_run.row("select * from marts.fct_batch_compute where batch_id = ?", [b])
    for column in ("requested_gpu_hours", "occupied_gpu_hours", "effective_compute_gpu_hours", "unobserved_gpu_hours"):
        assert s.value("compute_hours", column, column) == compute[column], column
    tiers = ("effective_compute_gpu_hours", "comm_wait_gpu_hours", "idle_gpu_hours", "unobserved_gpu_hours")
    for column in tiers[1:3]:
        assert s.value("compute_hours", column, column) == compute[column], column
    # The tier chart's bars are the mart's tiers, and they add up to the occupied hours.
    assert {k: v for k, v, _ in s.charts["utilisation_tiers"]} == {column: compute[column] for column in tiers}
    assert sum(compute[column] for column in tiers) == compute["occupied_gpu_hours"]
    for column in ("step_seconds_median", "step_seconds_max", "step_max_number", "steps_counted"):
        assert s.value("steps", "whole batch", column) == compute[column], column
    for field, column in (
        ("cumulative_cost", "compute_cost"),
        ("unit_cost", "cost_per_counted_step"),
        ("allocation_vs_utilization", "effective_compute_gpu_hours"),
    ):
        assert s.value("misread", field, column) == compute[column], field

    for category, jobs, hours, cost in demo_run.query(
        "select termination_category, failed_jobs, failed_gpu_hours, failed_compute_cost from marts.fct_batch_failures "
        "where batch_id = ?",
        [b],
    ):
        assert s.value("failures", category, "failed_jobs") == jobs
        assert (
            s.value("failures", category, "failed_gpu_hours"),
            s.value("failures", category, "failed_compute_cost"),
        ) == (
            hours,
            cost,
        )
    reruns = demo_run.query(
        "select run_reason, count(*), sum(occupied_gpu_hours), sum(compute_cost) from marts.fct_runs "
        "where batch_id = ? and is_rerun group by run_reason",
        [b],
    )
    assert reruns  # B-7 reruns a failed job
    for reason, runs, occupied, cost in reruns:
        assert s.value("reruns", reason, "runs") == runs
        assert (s.value("reruns", reason, "occupied_gpu_hours"), s.value("reruns", reason, "compute_cost")) == (
            occupied,
            cost,
        )
    for job_key, lineage_job in demo_run.query(
        "select job_key, lineage_job_id from marts.fct_runs where batch_id = ? and lineage_type is not null", [b]
    ):
        assert s.figures[("lineage", job_key, "lineage_job_id")][0] == lineage_job

    budget = demo_run.row("select * from marts.fct_batch_budget where batch_id = ?", [b])
    for column in ("budget_cost", "actual_cost", "variance", "rounds_run", "max_trial_rounds"):
        assert s.value("budget", column, column) == budget[column], column
    assert s.figures[("budget", "stop_signal", "stop_signal")][0] == str(budget["stop_signal"]).lower()
    for version, total in demo_run.query(
        "select snapshot_version, total_cost from marts.fct_batch_cost_history where batch_id = ?", [b]
    ):
        assert s.value("history", str(version), "total_cost") == total
        assert (str(version), total) in {(k, v) for k, v, _ in s.charts["cost_history"]}
    what_if = demo_run.row("select * from marts.fct_batch_what_if where batch_id = ?", [b])
    for column in ("compute_cost_at_best_utilization", "owned_compute_cost", "cloud_cost_of_owned_gpu_hours"):
        assert s.value("what_if", column, column) == what_if[column], column
    assert s.figures[("what_if", "cloud_gpu_sku", "cloud_gpu_sku")][0] == what_if["cloud_gpu_sku"]


def test_month_restricts_the_bill(statements, demo_run):
    """The demo's costs all fall in November: December's bill of B-7 is 0.00 with no line, the rest is to date."""
    december = statements.december
    assert december.value("bill_total", "amount", "amount") == Decimal("0.00")
    assert not [key for key in december.figures if key[0].startswith("bill_by_")]
    assert ("batch_costs", "total_cost", "total_cost") not in december.figures
    occupied = demo_run.row("select occupied_gpu_hours from marts.fct_batch_compute where batch_id = 'B-7'")
    assert december.value("compute_hours", "occupied_gpu_hours", "occupied_gpu_hours") == occupied["occupied_gpu_hours"]


def test_team_batches_sum_to_the_team_total(statements, demo_run):
    s = statements.team_figures
    batches = {b for (b,) in demo_run.query("select batch_id from marts.dim_batches where team = ?", [statements.team])}
    rows = {row for section, row, _ in s.figures if section == "chargeback" and row != "team"}
    assert rows == batches
    for column in ("compute_cost", "storage_cost", "labour_cost", "services_cost", "total_cost", "total_cost_low"):
        per_batch = sum(s.value("chargeback", batch, column) for batch in batches)
        assert per_batch == s.value("chargeback", "team", column), column
    (mart_total,) = demo_run.query(
        "select sum(c.total_cost) from marts.fct_batch_costs as c join marts.dim_batches as d using (batch_id) "
        "where d.team = ?",
        [statements.team],
    )[0]
    assert s.value("chargeback", "team", "total_cost") == mart_total  # every demo cost line is of 2026-11
    for batch in batches:
        (total,) = demo_run.query("select total_cost from marts.fct_batch_costs where batch_id = ?", [batch])[0]
        assert s.value("chargeback", batch, "total_cost") == total, batch


def test_charts_are_drawn_in_proportion_to_the_figures(statements):
    charts = {**statements.batch_figures.charts, **{f"team {k}": v for k, v in statements.team_figures.charts.items()}}
    assert {"gpu_hours", "utilisation_tiers", "cost_history", "team chargeback"} <= set(charts)
    for name, bars in charts.items():
        assert bars, name
        top = max(value for _, value, _ in bars)
        for key, value, width in bars:
            expected = (value / top * BAR_AREA) if top > 0 else Decimal(0)
            assert abs(width - max(expected, Decimal(0))) <= Decimal("0.01"), (name, key)
    hours = {key: (value, width) for key, value, width in charts["gpu_hours"]}
    assert hours["requested_gpu_hours"][1] > hours["occupied_gpu_hours"][1] > hours["effective_compute_gpu_hours"][1]


def test_statements_work_offline(statements, tmp_path):
    for name in ("batch", "december", "team"):
        text = (statements.warehouse.parent / f"{name}.html").read_text(encoding="utf-8")
        assert "http" not in text.lower(), name
        assert not re.search(r"<script|<img|<link|<iframe|\bsrc=|url\(|@import|@font-face", text, re.I), name
        assert text.count("<svg") >= 1, name


def test_unknown_batch_team_or_month_is_one_line_and_exit_2(statements, capsys):
    warehouse = str(statements.warehouse)
    for argv, named in (
        (["--batch", "B-404"], "B-404"),
        (["--team", "nobody", "--month", "2026-11"], "nobody"),
        (["--team", "post-training"], "--month"),
        (["--batch", "B-7", "--month", "2026-13"], "2026-13"),
    ):
        capsys.readouterr()
        assert main(["report", "--warehouse", warehouse, *argv]) == 2, argv
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1 and named in err, (argv, err)


def test_pdf_is_the_same_statement_on_pages(statements, demo_run, tmp_path):
    """--pdf lays the batch statement out as pages (WeasyPrint); read back with pypdf, the text holds its title, its
    sections' headings and the marts' figures as the HTML shows them."""
    from pypdf import PdfReader

    try:
        import weasyprint  # noqa: F401
    except OSError as missing:  # README's command on a machine without Debian's Pango; .ci/run installs it
        pytest.skip(f"Pango is not installed (apt-get install libpango-1.0-0 libpangoft2-1.0-0): {missing}")
    path = tmp_path / "B-7.pdf"
    argv = ["report", "--warehouse", str(statements.warehouse), "--batch", "B-7", "--pdf", "--out", str(path)]
    assert main(argv) == 0
    assert path.read_bytes().startswith(b"%PDF-")
    reader = PdfReader(path)
    text = " ".join(" ".join((page.extract_text() or "").split()) for page in reader.pages)
    costs = demo_run.row("select total_cost, currency from marts.fct_batch_costs where batch_id = 'B-7'")
    what_if = demo_run.row("select cloud_cost_of_owned_gpu_hours from marts.fct_batch_what_if where batch_id = 'B-7'")
    assert "Statement of batch B-7" in text
    for heading in ("Failures and reruns", "Where money could have been saved", "Energy and carbon"):
        assert heading in text, heading
    assert f"{costs['total_cost']:,.2f} {costs['currency']}" in text
    assert f"{what_if['cloud_cost_of_owned_gpu_hours']:,.2f} {costs['currency']}" in text
    assert len(reader.pages) >= 2


def test_pdf_without_weasyprint_is_one_line_naming_what_to_install(statements, monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "weasyprint", None)  # import weasyprint raises ImportError
    path = tmp_path / "B-7.pdf"
    capsys.readouterr()
    argv = ["report", "--warehouse", str(statements.warehouse), "--batch", "B-7", "--pdf", "--out", str(path)]
    assert main(argv) == 11
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and ".[pdf]" in err and "libpango" in err
    assert not path.exists()


def test_the_three_misread_fields_stand_beside_their_figures_with_the_contract_s_reading(statements, demo_run):
    """R17: each misread field's row shows the mart's figures and, beside them, the contract's reading of them."""
    import html

    from cost_pipeline.contract import load_contract

    compute = demo_run.row("select * from marts.fct_batch_compute where batch_id = ?", [statements.batch])
    readings = load_contract(compute["contract_version"]).document["misread_fields"]
    page = (statements.warehouse.parent / "batch.html").read_text(encoding="utf-8")
    shown = {
        "cumulative_cost": ("compute_cost", "rerun_compute_cost", "rerun_gpu_hours", "failed_gpu_hours"),
        "unit_cost": ("cost_per_counted_step", "steps_counted", "steps_run"),
        "allocation_vs_utilization": ("occupied_gpu_hours", "effective_compute_gpu_hours"),
    }
    for field, figures in shown.items():
        (row,) = re.findall(rf'<tr data-row="{field}">(.*?)</tr>', page, re.S)
        reading = html.escape(" ".join(readings[field].split()))
        assert f'<td class="reading" data-reading="{field}">{reading}</td>' in row
        for figure in figures:
            assert statements.batch_figures.value("misread", field, figure) == compute[figure], (field, figure)
