"""``cost-pipeline report --batch`` and ``--team``: a self-contained HTML statement read from the warehouse's marts.

One job: query the marts on a read-only connection and render them as one HTML file that works offline (inline CSS,
charts as inline SVG bars drawn from the figures; no script, font, image or address to fetch). Every figure comes
from a mart as it stands; the only sums made here are of ``fct_cost_lines`` (the bill by type, phase and evidence
level, and a team's chargeback), where an unpriced line makes its sum unpriced, never a partial total. Each figure's
cell carries ``data-figure`` (the mart column) and ``data-value`` (the exact value) so a reader or a test can check
it against the mart. Every statement that covers a job still running says in bold that its figures are provisional
(``_provisional``). The statement holds labour cost, so it is for finance readers (docs/confidentiality.md).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import duckdb

from cost_pipeline.calendar_months import next_month
from cost_pipeline.command_error import CommandError
from cost_pipeline.contract import load_contract

ARGUMENT_EXIT = 2  # docs/operations.md: an unknown batch or team is a wrong argument
BAR_AREA = 300  # SVG width, in px, of the longest bar of a chart


class StatementError(CommandError):
    """A statement that cannot be written; the message is one line."""

    default_exit_code = ARGUMENT_EXIT


@dataclass(frozen=True)
class Col:
    """One column of a statement table: the mart column (``data-figure``), its heading and how it is shown."""

    key: str
    heading: str
    kind: str = "text"  # text, money, rate (money per unit, 4 decimals), hours, ratio, count, pct, seconds, flag


_BILL = (
    Col("amount", "amount", "money"),
    Col("amount_low", "low", "money"),
    Col("amount_high", "high", "money"),
    Col("rerun_amount", "of which rerun", "money"),
)
_HOURS = (
    ("requested_gpu_hours", "requested"),
    ("occupied_gpu_hours", "occupied"),
    ("effective_compute_gpu_hours", "effective"),
)
_TIERS = (
    ("effective_compute_gpu_hours", "effective compute"),
    ("comm_wait_gpu_hours", "communication wait"),
    ("idle_gpu_hours", "idle"),
    ("unobserved_gpu_hours", "unobserved"),
)
_FAILURES = (
    Col("termination_category", "reason category"),
    Col("failed_jobs", "failed runs", "count"),
    Col("repeated_same_cause_jobs", "same-cause repeats", "count"),
    Col("failed_gpu_hours", "GPU-h", "hours"),
    Col("failed_compute_cost", "cost", "money"),
)
_RUNS = (
    Col("job_id", "run"),
    Col("phase", "phase"),
    Col("run_reason", "run reason"),
    Col("termination_reason", "ended"),
    Col("lineage_type", "lineage"),
    Col("lineage_job_id", "of run"),
    Col("lineage_job_found", "found", "flag"),
    Col("occupied_gpu_hours", "GPU-h", "hours"),
    Col("compute_cost", "cost", "money"),
)
_RERUNS = (
    Col("run_reason", "rerun reason"),
    Col("runs", "runs", "count"),
    Col("occupied_gpu_hours", "GPU-h", "hours"),
    Col("compute_cost", "cost", "money"),
)
_STEPS = (
    Col("phase", "phase"),
    Col("steps_run", "run", "count"),
    Col("steps_counted", "counted", "count"),
    Col("steps_discarded", "discarded", "count"),
    Col("step_seconds_median", "median s", "seconds"),
    Col("step_seconds_max", "max s", "seconds"),
    Col("step_max_number", "at step", "count"),
)
_DISCARDS = (
    Col("phase", "phase"),
    Col("discarded_reason", "reason"),
    Col("steps_discarded", "steps", "count"),
    Col("tokens_discarded", "tokens", "count"),
)
_BUDGET = (
    Col("budget_cost", "budget", "money"),
    Col("actual_cost", "actual", "money"),
    Col("variance", "variance", "money"),
    Col("variance_pct", "variance %", "pct"),
    Col("variance_boundary_pct", "boundary %", "pct"),
    Col("over_boundary", "over boundary", "flag"),
    Col("rounds_run", "rounds run", "count"),
    Col("max_trial_rounds", "rounds allowed", "count"),
    Col("stop_signal", "stop signal", "flag"),
    Col("stop_reason", "stop reason"),
    Col("stop_condition", "stop condition"),
)
_REVIEW = (
    Col("exploration_cost", "reasonable exploration", "money"),
    Col("unforeseeable_failure_cost", "unforeseeable failure", "money"),
    Col("avoidable_rework_cost", "avoidable rework", "money"),
    Col("planned_work_cost", "planned work", "money"),
)
_FORECAST = (
    Col("plan_progress_pct", "plan progress %", "pct"),
    Col("projected_total_cost_low", "projected low", "money"),
    Col("projected_total_cost", "projected", "money"),
    Col("projected_total_cost_high", "projected high", "money"),
    Col("projected_over_boundary", "projected over boundary", "flag"),
)
_HISTORY = (
    Col("snapshot_version", "version", "count"),
    Col("contract_version", "contract"),
    Col("config_version", "config"),
    Col("data_version", "data"),
    Col("compute_cost", "compute", "money"),
    Col("total_cost", "total", "money"),
    Col("total_cost_low", "low", "money"),
    Col("total_cost_high", "high", "money"),
    Col("changed_columns", "changed"),
)
_SAVINGS = (
    Col("category", "category"),
    Col("amount", "amount", "money"),
    Col("gpu_hours", "GPU-h", "hours"),
    Col("on_batch_bill", "on the bill", "flag"),
    Col("lever", "lever"),
)
_WHAT_IF = (
    Col("effective_utilization", "effective utilization", "ratio"),
    Col("best_effective_utilization", "organisation's best", "ratio"),
    Col("compute_cost_at_best_utilization", "compute cost at the best", "money"),
    Col("saving_at_best_utilization", "saving at the best", "money"),
    Col("cloud_gpu_sku", "cloud SKU of the same GPU"),
    Col("owned_gpu_hours", "owned GPU-hours", "hours"),
    Col("owned_compute_cost", "their internal cost", "money"),
    Col("cloud_cost_of_owned_gpu_hours", "at the cloud price", "money"),
    Col("owned_minus_cloud", "owned minus cloud", "money"),
)
_ENERGY = (
    Col("phase", "phase"),
    Col("gpu_kwh", "GPU kWh", "hours"),
    Col("facility_kwh", "facility kWh", "hours"),
    Col("carbon_kg_co2e", "kg CO2e", "hours"),
    Col("energy_cost", "energy cost", "money"),
    Col("unobserved_gpu_hours", "unobserved GPU-h", "hours"),
    Col("energy_evidence", "evidence"),
)
_CHARGEBACK = (
    Col("batch_id", "batch"),
    Col("compute_cost", "compute", "money"),
    Col("storage_cost", "storage", "money"),
    Col("labour_cost", "labour", "money"),
    Col("services_cost", "services", "money"),
    Col("total_cost", "total", "money"),
    Col("total_cost_low", "low", "money"),
    Col("total_cost_high", "high", "money"),
    Col("unpriced_gpu_hours", "unpriced GPU-h", "hours"),
)
_COST_TYPES = ("compute", "storage", "labour", "services")

_CSS = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 70em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #eee; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tfoot td { font-weight: bold; border-top: 2px solid #888; }
p.note, td.reading { color: #555; font-size: 0.9em; }
svg text { font-size: 12px; fill: #222; }
rect.bar { fill: #4a78a8; }
"""


# -- reading the marts ------------------------------------------------------------------------------------------------


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> list[dict]:
    cursor = con.execute(sql, params or [])
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> dict | None:
    rows = _rows(con, sql, params)
    return rows[0] if rows else None


def _has_marts(con: duckdb.DuckDBPyConnection) -> None:
    built = con.execute(
        "select count(*) from information_schema.tables where table_schema = 'marts' and table_name = 'dim_batches'"
    ).fetchall()[0][0]
    if not built:
        raise StatementError("the warehouse holds no marts: no night has built marts.dim_batches")


def _month_condition(month: date | None) -> tuple[str, list]:
    return ("", []) if month is None else (" and month = ?", [month])


def _line_sums(group: str) -> str:
    """Sums of fct_cost_lines per ``group``: an unpriced line (null amount) makes the amount and its range unpriced
    (null), never the sum of the priced part."""
    unpriced = "count(*) filter (where is_unpriced) > 0"
    return (
        f"select {group}, "
        f"case when {unpriced} then null else sum(amount) end as amount, "
        f"case when {unpriced} then null else sum(amount_low) end as amount_low, "
        f"case when {unpriced} then null else sum(amount_high) end as amount_high, "
        f"case when {unpriced} then null else sum(rerun_amount) end as rerun_amount, "
        "sum(case when is_unpriced then gpu_hours else 0 end) as unpriced_gpu_hours "
        "from marts.fct_cost_lines"
    )


# -- rendering --------------------------------------------------------------------------------------------------------


def _text(value: object, kind: str, currency: str) -> str:
    """A figure as the reader sees it: money with two decimals and its currency, exact (Decimal, never a float)."""
    if value is None:
        return "unpriced" if kind == "money" else "–"
    if kind == "money":
        return f"{Decimal(value):,.2f} {currency}"
    if kind == "rate":
        return f"{Decimal(value):,.4f} {currency}"
    if kind == "flag":
        return "yes" if value else "no"
    if kind in ("hours", "ratio"):
        return f"{Decimal(value):,.4f}"
    if kind in ("pct", "seconds"):
        return f"{Decimal(value):,.2f}" if kind == "pct" else f"{Decimal(value):,}"
    if kind == "count":
        return f"{value:,}"
    return str(value)


def _cell(key: str, value: object, kind: str, currency: str) -> str:
    exact = "" if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
    numeric = ' class="n"' if kind not in ("text", "flag") else ""
    return (
        f'<td{numeric} data-figure="{html.escape(key)}" data-value="{html.escape(exact)}">'
        f"{html.escape(_text(value, kind, currency))}</td>"
    )


def _table(section: str, columns: tuple[Col, ...], rows: list[dict], currency: str, row_key: str | None = None) -> str:
    """A table whose rows carry ``data-row`` (the value of ``row_key``, else the row's number)."""
    if not rows:
        return '<p class="note">None.</p>'
    head = "".join(f"<th>{html.escape(c.heading)}</th>" for c in columns)
    body = []
    for number, row in enumerate(rows, start=1):
        name = row[row_key] if row_key else number
        cells = "".join(_cell(c.key, row[c.key], c.kind, currency) for c in columns)
        body.append(f'<tr data-row="{html.escape(str(name))}">{cells}</tr>')
    return f'<table data-section="{section}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _record(section: str, columns: tuple[Col, ...], row: dict, currency: str) -> str:
    """One row shown as a two-column table: heading, figure."""
    lines = "".join(
        f'<tr data-row="{html.escape(c.key)}"><th>{html.escape(c.heading)}</th>'
        f"{_cell(c.key, row[c.key], c.kind, currency)}</tr>"
        for c in columns
    )
    return f'<table data-section="{section}">{lines}</table>'


def bar_chart(chart: str, bars: list[tuple[str, str, Decimal | None]], unit: str, missing: str = "unpriced") -> str:
    """Horizontal bars, one per (key, label, value), each as long as its value in proportion to the largest; a null
    value draws no bar and says so (``missing``: a cost without a price, GPU-hours not known). The ``rect`` carries
    ``data-bar`` and ``data-value`` for a reader to check."""
    values = [v for _, _, v in bars if v is not None]
    top = max(values, default=Decimal(0))
    row_height, label_width = 22, 190
    parts = []
    for number, (key, label, value) in enumerate(bars):
        y = number * row_height
        width = Decimal(0) if value is None or top <= 0 else Decimal(value) / top * BAR_AREA
        width = max(width, Decimal(0)).quantize(Decimal("0.01"))
        shown = missing if value is None else f"{Decimal(value):,} {unit}"
        parts.append(f'<text x="0" y="{y + 15}">{html.escape(label)}</text>')
        if value is not None:
            parts.append(
                f'<rect class="bar" data-bar="{html.escape(key)}" data-value="{value}" x="{label_width}" '
                f'y="{y + 3}" width="{width}" height="{row_height - 6}"/>'
            )
        parts.append(f'<text x="{label_width + float(width) + 6:.2f}" y="{y + 15}">{html.escape(shown)}</text>')
    height = row_height * len(bars)
    total_width = label_width + BAR_AREA + 170
    return (
        f'<svg data-chart="{html.escape(chart)}" role="img" width="{total_width}" height="{height}" '
        f'viewBox="0 0 {total_width} {height}">{"".join(parts)}</svg>'
    )


def _page(title: str, lead: str, sections: list[tuple[str, str, str]]) -> str:
    """The whole document: sections as (id, heading, body)."""
    body = "".join(
        f'<section id="{sid}"><h2>{html.escape(heading)}</h2>{part}</section>' for sid, heading, part in sections
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{lead}{body}</body></html>\n"
    )


def _note(text: str) -> str:
    return f'<p class="note">{html.escape(text)}</p>'


# -- the batch statement ----------------------------------------------------------------------------------------------


def _bill(con: duckdb.DuckDBPyConnection, batch_id: str, month: date | None, currency: str) -> str:
    where, params = _month_condition(month)
    parts = []
    for group, heading in (("cost_type", "cost type"), ("phase", "phase"), ("evidence_level", "evidence level")):
        rows = _rows(
            con, f"{_line_sums(group)} where batch_id = ?{where} group by {group} order by {group}", [batch_id, *params]
        )
        parts.append(f"<h3>By {heading}</h3>")
        parts.append(_table(f"bill_by_{group}", (Col(group, heading), *_BILL), rows, currency, row_key=group))
    total = _one(con, f"{_line_sums('batch_id')} where batch_id = ?{where} group by batch_id", [batch_id, *params])
    total = total or {"amount": Decimal("0.00"), "amount_low": Decimal("0.00"), "amount_high": Decimal("0.00")}
    total_cols = (
        Col("amount", "total", "money"),
        Col("amount_low", "low", "money"),
        Col("amount_high", "high", "money"),
    )
    parts.insert(0, _record("bill_total", total_cols, total, currency))
    if month is None:
        costs = _one(con, "select * from marts.fct_batch_costs where batch_id = ?", [batch_id])
        if costs is not None:
            parts.append("<h3>As fct_batch_costs states it</h3>")
            columns = tuple(Col(f"{t}_cost", t, "money") for t in _COST_TYPES) + (
                Col("total_cost", "total", "money"),
                Col("total_cost_low", "low", "money"),
                Col("total_cost_high", "high", "money"),
                Col("rerun_cost", "of which rerun (inside compute)", "money"),
                Col("weakest_evidence_level", "weakest evidence"),
            )
            parts.append(_record("batch_costs", columns, costs, currency))
    return "".join(parts)


def _compute(compute: dict | None) -> str:
    if compute is None:
        return _note("No compute: the batch ran no job.")
    # requested is null when no run's request is known (issue 10): no bar, "not known", never 0
    hours = bar_chart("gpu_hours", [(k, label, compute[k]) for k, label in _HOURS], "GPU-h", "not known")
    tiers = bar_chart("utilisation_tiers", [(k, label, compute[k]) for k, label in _TIERS], "GPU-h")
    columns = tuple(Col(k, label, "hours") for k, label in (*_HOURS, *_TIERS[1:])) + (
        Col("jobs_without_time_limit", "runs without a time limit (no requested hours)", "count"),
        Col("jobs_without_gpu_request", "runs whose requested GPUs are not known (no requested hours)", "count"),
    )
    return (
        "<h3>Requested, occupied, effective</h3>"
        + hours
        + "<h3>Occupied GPU-hours by utilisation tier (they add up to occupied)</h3>"
        + tiers
        + _record("compute_hours", columns, compute, "")
    )


def _failures(con: duckdb.DuckDBPyConnection, batch_id: str, currency: str) -> str:
    failures = _rows(
        con,
        "select * from marts.fct_batch_failures where batch_id = ? "
        "order by failed_gpu_hours desc, termination_category",
        [batch_id],
    )
    reruns = _rows(
        con,
        "select run_reason, count(*) as runs, sum(occupied_gpu_hours) as occupied_gpu_hours, "
        "case when bool_or(has_unpriced_month) then null else sum(compute_cost) end as compute_cost "
        "from marts.fct_runs where batch_id = ? and is_rerun group by run_reason order by run_reason",
        [batch_id],
    )
    runs = _rows(
        con,
        "select * from marts.fct_runs where batch_id = ? and (is_failed or is_rerun or lineage_type is not null) "
        "order by start_at nulls last, job_key",
        [batch_id],
    )
    return (
        "<h3>Failed runs by reason category</h3>"
        + _table("failures", _FAILURES, failures, currency, row_key="termination_category")
        + "<h3>Reruns by reason</h3>"
        + _table("reruns", _RERUNS, reruns, currency, row_key="run_reason")
        + "<h3>Failed and rerun runs, with lineage</h3>"
        + _table("lineage", _RUNS, runs, currency, row_key="job_key")
    )


def _steps(con: duckdb.DuckDBPyConnection, batch_id: str, compute: dict | None) -> str:
    if compute is None:
        return _note("No steps.")
    phases = _rows(con, "select * from marts.fct_phase_compute where batch_id = ? order by phase", [batch_id])
    discards = _rows(
        con, "select * from marts.fct_step_discards where batch_id = ? order by phase, discarded_reason", [batch_id]
    )
    whole = {**compute, "phase": "whole batch"}
    return (
        _table("steps", _STEPS, [whole, *phases], "", row_key="phase")
        + _note("Step time is the median and the maximum, with the step number of the maximum; never the mean alone.")
        + "<h3>Discarded steps by reason</h3>"
        + _table("discards", _DISCARDS, discards, "")
    )


def _plan(con: duckdb.DuckDBPyConnection, batch_id: str, currency: str) -> str:
    budget = _one(con, "select * from marts.fct_batch_budget where batch_id = ?", [batch_id])
    if budget is None:
        return _note("No plan: only a registered batch has a budget.")
    parts = [_record("budget", _BUDGET, budget, currency), "<h3>Review of the actual cost</h3>"]
    parts.append(_record("review", _REVIEW, budget, currency))
    forecast = _one(con, "select * from marts.fct_batch_forecast where batch_id = ?", [batch_id])
    if forecast is not None:
        parts += ["<h3>Cost to complete (running batch)</h3>", _record("forecast", _FORECAST, forecast, currency)]
    return "".join(parts)


def _history(con: duckdb.DuckDBPyConnection, batch_id: str, currency: str) -> str:
    versions = _rows(
        con, "select * from marts.fct_batch_cost_history where batch_id = ? order by snapshot_version", [batch_id]
    )
    if not versions:
        return _note("No snapshot yet.")
    chart = bar_chart(
        "cost_history",
        [(str(v["snapshot_version"]), f"version {v['snapshot_version']}", v["total_cost"]) for v in versions],
        currency,
    )
    return chart + _table("history", _HISTORY, versions, currency, row_key="snapshot_version")


def _misread(compute: dict | None, contract_version: str) -> str:
    """R17: the three misread fields, each figure beside its correct reading (the contract's own words)."""
    if compute is None:
        return _note("No compute figures to misread.")
    readings = load_contract(contract_version).document["misread_fields"]
    currency = compute["currency"]
    rows = (
        (
            "cumulative_cost",
            (
                ("compute_cost", "money"),
                ("rerun_compute_cost", "money"),
                ("rerun_gpu_hours", "hours"),
                ("failed_gpu_hours", "hours"),
            ),
        ),
        ("unit_cost", (("cost_per_counted_step", "rate"), ("steps_counted", "count"), ("steps_run", "count"))),
        ("allocation_vs_utilization", (("occupied_gpu_hours", "hours"), ("effective_compute_gpu_hours", "hours"))),
    )
    body = []
    for field, figures in rows:
        cells = "".join(
            f"<div>{html.escape(key)}: <span "
            f'data-figure="{key}" data-value="{"" if compute[key] is None else compute[key]}">'
            f"{html.escape(_text(compute[key], kind, currency))}</span></div>"
            for key, kind in figures
        )
        body.append(
            f'<tr data-row="{field}"><th>{html.escape(field)}</th><td class="n">{cells}</td>'
            f'<td class="reading" data-reading="{field}">{html.escape(" ".join(readings[field].split()))}</td></tr>'
        )
    head = "<tr><th>field</th><th>figure</th><th>read it as</th></tr>"
    return f'<table data-section="misread">{head}{"".join(body)}</table>'


def _provisional(con: duckdb.DuckDBPyConnection, whose: str, runs: str, params: list) -> str:
    """The warning every statement gives while it covers a job still running (marts.fct_runs.is_running: occupied
    and priced until its export saw it running, so its figures are so far); empty when it covers none. ``runs`` is
    the condition on fct_runs that picks the jobs the statement covers, ``whose`` names them (``this batch``)."""
    [(running,)] = con.execute(f"select count(*) from marts.fct_runs where is_running and {runs}", params).fetchall()
    if running == 0:
        return ""
    if running == 1:
        jobs, its, them = f"1 job of {whose} was", "Its", "the job"
    else:
        jobs, its, them = f"{running:,} jobs of {whose} were", "Their", "them"
    text = (
        f"Provisional: {jobs} still running when the scheduler export was written. {its} GPU-hours and cost are so "
        f"far (until the export saw {them} running), not final: a later night's figures replace them."
    )
    return f'<p class="note" data-provisional-jobs="{running}"><strong>{html.escape(text)}</strong></p>'


def batch_statement(con: duckdb.DuckDBPyConnection, batch_id: str, month: date | None = None) -> str:
    """The statement of one batch (its bill restricted to ``month`` when given) as one HTML document."""
    _has_marts(con)
    batch = _one(con, "select * from marts.dim_batches where batch_id = ?", [batch_id])
    if batch is None:
        raise StatementError(f"no batch {batch_id!r} in marts.dim_batches")
    currency = load_contract(batch["contract_version"]).reporting_currency
    compute = _one(con, "select * from marts.fct_batch_compute where batch_id = ?", [batch_id])
    savings = _rows(con, "select * from marts.fct_batch_savings where batch_id = ? order by savings_rank", [batch_id])
    energy = _rows(con, "select * from marts.fct_batch_energy where batch_id = ? order by phase", [batch_id])
    what_if = _one(con, "select * from marts.fct_batch_what_if where batch_id = ?", [batch_id])
    scope = "to date" if month is None else f"bill of {month:%Y-%m}"
    lead = _note(
        f"Team {batch['team'] or '–'}, project {batch['project'] or '–'}: {batch['goal'] or ''} "
        f"Contract {batch['contract_version']}; amounts in {currency}."
    )
    if month is not None:
        lead += _note(
            f"The bill is the cost lines of {month:%Y-%m}; the other sections are the batch to date (their marts "
            "have no month)."
        )
    lead += _provisional(con, "this batch", "batch_id = ?", [batch_id])
    return _page(
        f"Statement of batch {batch_id}, {scope}",
        lead,
        [
            ("bill", "The bill by cost type, phase and evidence level", _bill(con, batch_id, month, currency)),
            ("compute", "GPU-hours: requested, occupied, effective", _compute(compute)),
            ("failures", "Failures and reruns", _failures(con, batch_id, currency)),
            ("steps", "Step time and counted steps", _steps(con, batch_id, compute)),
            ("plan", "Plan vs actual and the stop signal", _plan(con, batch_id, currency)),
            ("history", "Cost history over snapshot versions", _history(con, batch_id, currency)),
            ("misread", "Three misread fields (R17)", _misread(compute, batch["contract_version"])),
            (
                "savings",
                "Where money could have been saved",
                _table("savings", _SAVINGS, savings, currency, "category"),
            ),
            (
                "what_if",
                "What if: the best observed utilization, and owned vs cloud",
                _note("Only a registered batch has a what-if.")
                if what_if is None
                else _record("what_if", _WHAT_IF, what_if, currency),
            ),
            ("energy", "Energy and carbon", _table("energy", _ENERGY, energy, currency, row_key="phase")),
        ],
    )


# -- the team chargeback ----------------------------------------------------------------------------------------------


def _chargeback_sums(select: str) -> str:
    """Per-type and total sums of a month's fct_cost_lines; unpriced lines make the sums null (not partial)."""
    unpriced = "count(l.batch_id) filter (where l.is_unpriced) > 0"
    types = ", ".join(
        f"case when {unpriced} then null else coalesce(sum(l.amount) filter (where l.cost_type = '{t}'), 0) end "
        f"as {t}_cost"
        for t in _COST_TYPES
    )
    return (
        f"select {select}, {types}, "
        f"case when {unpriced} then null else coalesce(sum(l.amount), 0) end as total_cost, "
        f"case when {unpriced} then null else coalesce(sum(l.amount_low), 0) end as total_cost_low, "
        f"case when {unpriced} then null else coalesce(sum(l.amount_high), 0) end as total_cost_high, "
        "coalesce(sum(case when l.is_unpriced then l.gpu_hours else 0 end), 0) as unpriced_gpu_hours "
        "from marts.dim_batches as b left join marts.fct_cost_lines as l on l.batch_id = b.batch_id and l.month = ? "
        "where b.team = ?"
    )


def team_statement(con: duckdb.DuckDBPyConnection, team: str, month: date) -> str:
    """A month's chargeback statement of ``team``: each of its batches' cost in the month, and the team's total."""
    _has_marts(con)
    known = con.execute("select contract_version from marts.dim_batches where team = ? limit 1", [team]).fetchall()
    if not known:
        raise StatementError(f"no team {team!r} in marts.dim_batches")
    currency = load_contract(known[0][0]).reporting_currency
    batches = _rows(con, f"{_chargeback_sums('b.batch_id')} group by b.batch_id order by b.batch_id", [month, team])
    total = _one(con, _chargeback_sums("'team total' as batch_id"), [month, team])
    table = _table("chargeback", _CHARGEBACK, batches, currency, row_key="batch_id")
    foot = "".join(_cell(c.key, total[c.key], c.kind, currency) for c in _CHARGEBACK)
    table = table.replace("</tbody></table>", f'</tbody><tfoot><tr data-row="team">{foot}</tr></tfoot></table>')
    chart = bar_chart("chargeback", [(b["batch_id"], b["batch_id"], b["total_cost"]) for b in batches], currency)
    lead = _note(
        f"Every cost line of {month:%Y-%m} (marts.fct_cost_lines) of the batches team {team} is responsible for "
        f"(marts.dim_batches); amounts in {currency}. The batches' totals add up to the team's total to the cent."
    )
    # A job running since before the month's end has cost in it so far, or will have (it has not ended).
    lead += _provisional(
        con,
        "this team's batches",
        "start_at < ? and batch_id in (select batch_id from marts.dim_batches where team = ?)",
        [next_month(month), team],
    )
    return _page(
        f"Chargeback statement of team {team}, {month:%Y-%m}",
        lead,
        [("chargeback", "Cost per batch", chart + table)],
    )
