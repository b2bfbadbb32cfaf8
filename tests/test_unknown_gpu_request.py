"""An sacct export without ReqTRES through a whole night (issue 10): what its jobs were allocated is read from
AllocTRES and charged as from any export; what they requested is not known, and nothing derived from it is reported
as a number (never 0 GPUs, never the allocated ones copied).

On the demo's owned capacity, two batches registered like B-8 run the same two jobs, submitted 20 November 00:00,
each with a time limit of 4 hours: a finished job (8 GPUs allocated, started 01:00, ended 02:00, so queued 1 hour)
and a pending one (no Start, nothing allocated). B-K's export names ReqTRES (gres/gpu=8 for both); B-U's has no
ReqTRES field, as NordicHPC/sonar's field list has none. B-M runs both pairs (its own JobIDs), one pair from an
export with ReqTRES and one from an export without: its requested GPU-hours are the known pair's alone.
"""

from __future__ import annotations

import io
from decimal import Decimal
from fractions import Fraction

import duckdb

from cost_pipeline.cli import report, run_pipeline
from cost_pipeline.statement import batch_statement
from tests.helpers import query
from tests.test_end_to_end import job_cost
from tests.test_waiting import NOVEMBER_PRICE, _cents

FIELDS = ["JobID", "State", "Submit", "Start", "End", "Elapsed", "Timelimit", "NNodes", "AllocTRES", "Comment"]
TRES = "billing=8,cpu=8,gres/gpu=8,mem=64G,node=1"


def _export(batch: str, first_job: int, with_requests: bool) -> str:
    """The batch's sacct export: its finished job and its pending job, ReqTRES after NNodes when ``with_requests``."""
    comment = f"batch={batch};phase=training;reason=planned_experiment"
    finished = [str(first_job), "COMPLETED", "2026-11-20T00:00:00", "2026-11-20T01:00:00", "2026-11-20T02:00:00"]
    finished += ["01:00:00", "04:00:00", "1", TRES, comment]
    pending = [str(first_job + 1), "PENDING", "2026-11-20T00:00:00", "Unknown", "Unknown", "00:00:00", "04:00:00"]
    pending += ["1", "", comment]
    lines = [FIELDS, finished, pending]
    if with_requests:
        lines = [
            [*line[:8], requested, *line[8:]] for line, requested in zip(lines, ["ReqTRES", TRES, TRES], strict=True)
        ]
    return "".join("|".join(line) + "\n" for line in lines)


def test_a_night_without_req_tres_charges_the_allocation_and_knows_no_request(demo_copy):
    landing = demo_copy / "landing"
    registry = landing / "registry" / "batches.csv"
    b8 = next(line for line in registry.read_text(encoding="utf-8").splitlines() if line.startswith("B-8,"))
    with registry.open("a", encoding="utf-8") as out:
        out.writelines(b8.replace("B-8,", f"{batch},", 1) + "\n" for batch in ("B-K", "B-U", "B-M"))
    (landing / "scheduler" / "sacct_known.txt").write_text(_export("B-K", 9701, True), encoding="utf-8")
    (landing / "scheduler" / "sacct_unknown.txt").write_text(_export("B-U", 9601, False), encoding="utf-8")
    (landing / "scheduler" / "sacct_mixed_known.txt").write_text(_export("B-M", 9801, True), encoding="utf-8")
    (landing / "scheduler" / "sacct_mixed_unknown.txt").write_text(_export("B-M", 9811, False), encoding="utf-8")
    warehouse = demo_copy / "warehouse.duckdb"
    assert run_pipeline(landing, warehouse)

    def rows(sql: str) -> dict[str, tuple]:
        return {row[0]: row[1:] for row in query(warehouse, sql)}

    # Every line of the export without ReqTRES is staged: none refused (before issue 10 both jobs were quarantined).
    assert query(warehouse, "select rule from raw.quarantine where source_file like '%sacct_unknown%'") == []
    runs = rows(
        "select job_id, gpus_requested, gpus_allocated, requested_gpu_hours, occupied_gpu_hours, compute_cost "
        "from marts.fct_runs where job_id in ('9601', '9602', '9701', '9702')"
    )
    compute = rows(
        "select batch_id, jobs, jobs_without_time_limit, jobs_without_gpu_request, requested_gpu_hours, "
        "occupied_gpu_hours, compute_cost from marts.fct_batch_compute where batch_id in ('B-K', 'B-U', 'B-M')"
    )
    phases = rows(
        "select batch_id, jobs_without_gpu_request, requested_gpu_hours from marts.fct_phase_compute "
        "where batch_id in ('B-K', 'B-U', 'B-M')"
    )
    history = rows(
        "select batch_id, requested_gpu_hours from marts.fct_batch_cost_history "
        "where batch_id in ('B-K', 'B-U', 'B-M') and is_latest"
    )
    waiting = rows(
        "select batch_id, jobs, jobs_not_started, jobs_without_gpu_request, queued_gpu_hours "
        "from marts.fct_batch_waiting where batch_id in ('B-K', 'B-U', 'B-M')"
    )
    savings = rows(
        "select batch_id, amount, gpu_hours, savings_rank from marts.fct_batch_savings "
        "where batch_id in ('B-K', 'B-U', 'B-M') and category = 'queueing_on_owned_capacity'"
    )
    cost = job_cost(8)  # 8 GPUs x 1 hour at the demo's November price per GPU-hour
    # Compared whole, so that a failure shows every figure that is off.
    figures = {"runs": runs, "compute": compute, "phases": phases, "history": history}
    assert figures | {"waiting": waiting, "savings": savings} == {
        "runs": {
            # Allocated and charged alike: 8 GPUs x 1 hour; requested 8 x 4 hours where ReqTRES says so, else null.
            "9701": (8, 8, Decimal(32), Decimal(8), cost),
            "9601": (None, 8, None, Decimal(8), cost),
            "9702": (8, 0, Decimal(32), Decimal(0), Decimal("0.00")),
            "9602": (None, 0, None, Decimal(0), Decimal("0.00")),
        },
        "compute": {
            "B-K": (2, 0, 0, Decimal(64), Decimal(8), cost),
            # Neither run's request is known: both are counted in jobs_without_gpu_request, none in
            # requested_gpu_hours: not 64 made up from AllocTRES, not a silent 0 that a reader who skips the count
            # takes for "asked for nothing", but null (not known).
            "B-U": (2, 0, 2, None, Decimal(8), cost),
            # The known pair's 8 x 4 hours each; the other pair's request is not known and adds nothing.
            "B-M": (4, 0, 2, Decimal(64), Decimal(16), 2 * cost),
        },
        # One phase (training) each, the same figures as the batch's.
        "phases": {"B-K": (0, Decimal(64)), "B-U": (2, None), "B-M": (2, Decimal(64))},
        # The history keeps the figure as the batch's compute bill has it.
        "history": {"B-K": (Decimal(64),), "B-U": (None,), "B-M": (Decimal(64),)},
        "waiting": {
            # The finished job queued 1 hour with its 8 requested GPUs; the pending one is not started yet.
            "B-K": (2, 1, 0, Decimal(8)),
            # Its 1 hour queued with GPUs not known is no GPU-hour figure (null), and both jobs are counted.
            "B-U": (2, 1, 2, None),
            # The known pair's hour; the other finished job's hour is not known and adds nothing.
            "B-M": (4, 2, 2, Decimal(8)),
        },
        "savings": {
            # 8 queued GPU-hours in November at that month's price per available GPU-hour.
            "B-K": (_cents(Fraction(8) * NOVEMBER_PRICE), Decimal(8), 1),
            # Not known (null), never 0.00, and ranked after every known amount (seven categories).
            "B-U": (None, None, 7),
            "B-M": (None, None, 7),
        },
    }
    # B-U's statement shows its requested GPU-hours as not known: an empty figure and no bar, never 0.
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        page = batch_statement(con, "B-U")
    finally:
        con.close()
    assert '<td class="n" data-figure="requested_gpu_hours" data-value="">–</td>' in page
    assert 'data-bar="requested_gpu_hours"' not in page and ">not known</text>" in page
    # The printed compute bill marks a requested figure that leaves runs out (*), shows none known as a dash, never
    # 0.0000, and says under the table how many of the batch's runs are not in it and why (issue 10).
    out = io.StringIO()
    report(warehouse, out)
    bill = out.getvalue().split("Compute bill per batch (marts.fct_batch_compute):\n", 1)[1].split("\n\n", 1)[0]
    rows = [line.split() for line in bill.splitlines()]
    assert {cells[0]: cells[2] for cells in rows if cells[0] in ("B-K", "B-U", "B-M")} == {
        "B-K": "64.0000",
        "B-U": "-*",
        "B-M": "64.0000*",
    }
    notes = [line for line in bill.splitlines() if line.startswith("  B-")]
    assert notes == [
        "  B-M: 2 of 4 runs not in it (2 without ReqTRES, 0 without a time limit)",
        "  B-U: 2 of 2 runs not in it (2 without ReqTRES, 0 without a time limit)",
    ]
