"""The whole nightly job on the demo scenario, checked against figures computed by hand.

The scenario (cost_pipeline/demo.py): samples every 60 s; in every job the first 10 minutes are idle, then
every 10th minute waits on NVLink and the rest computes. So a job of M minutes on G GPUs has, per GPU,
10 idle minutes, (M - 10) / 10 comm-wait minutes and 0.9 (M - 10) effective minutes, except where noted.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

import pytest

# November 2026: two 8-GPU servers at 457,798.00 over 3 years, facility 2,016 + 1,152 + 288 = 3,456.00.
NOVEMBER_HOURS = 30 * 24
DEPRECIATION = Fraction(2 * 457_798 * NOVEMBER_HOURS, 3 * 365 * 24)  # 25,084.8219...
AVAILABLE_GPU_HOURS = 16 * NOVEMBER_HOURS  # 11,520
PRICE = (DEPRECIATION + 3456) / AVAILABLE_GPU_HOURS  # 2.4775019... per GPU-hour


def cents(value: Fraction) -> Decimal:
    return (Decimal(value.numerator) / Decimal(value.denominator)).quantize(Decimal("0.01"), ROUND_HALF_UP)


def job_cost(gpu_hours: int | Fraction) -> Decimal:
    """Money is rounded once per job and month, then summed."""
    return cents(PRICE * gpu_hours)


def hours(minutes: int) -> Decimal:
    return (Decimal(minutes) / 60).quantize(Decimal("0.0001"), ROUND_HALF_UP)


def test_the_nightly_job_succeeds(demo_run):
    assert demo_run.succeeded


def test_batch_b7_every_column_by_hand(demo_run):
    row = demo_run.row("select * from marts.fct_batch_compute where batch_id = 'B-7'")
    # Jobs 1001 (8 GPUs, 2 h, limit 4 h), 1002 (16, 4 h, limit 24 h, NODE_FAIL), 1003 (16, 6 h, limit 24 h,
    # failure_retry of 1002), 1004 (8, 1 h, limit 2 h), 1005 (8, 0.5 h, limit 1 h); sacct step rows excluded.
    effective = 8 * 99 + (8 * 207 + 8 * 153) + (15 * 315 + 261) + 8 * 45 + 8 * 18  # GPU-minutes
    comm = 8 * 11 + (8 * 23 + 8 * 17) + (15 * 35 + 29) + 8 * 5 + 8 * 2
    idle = 8 * 10 + (8 * 10 + 8 * 70) + 16 * 10 + 8 * 10 + 8 * 10  # gpu-b idles after the fault in 1002
    unobserved = 60  # 1003: one GPU's samples stop 1 h early
    assert effective + comm + idle + unobserved == 188 * 60
    cost = job_cost(16) + job_cost(64) + job_cost(96) + job_cost(8) + job_cost(4)
    expected = {
        "batch_id": "B-7",
        "contract_version": "v1",
        "jobs": 5,
        "requested_gpu_hours": Decimal(8 * 4 + 16 * 24 + 16 * 24 + 8 * 2 + 8 * 1),
        "occupied_gpu_hours": Decimal(16 + 64 + 96 + 8 + 4),
        "effective_compute_gpu_hours": hours(effective),
        "comm_wait_gpu_hours": hours(comm),
        "idle_gpu_hours": hours(idle),
        "unobserved_gpu_hours": hours(unobserved),
        "failed_gpu_hours": Decimal(64),
        "rerun_gpu_hours": Decimal(96),
        "steps_run": 13 + 20,  # 1002 ran steps 1-13, 1003 re-ran 11-30
        "steps_counted": 30,  # 11 and 12 rolled back, 13 never committed
        "steps_discarded": 2,
        "step_seconds_median": Decimal(600),
        "step_seconds_max": 900,
        "step_max_number": 17,
        "compute_cost": cost,
        "cost_per_counted_step": (cost / 30).quantize(Decimal("0.0001"), ROUND_HALF_UP),
        "cost_per_effective_gpu_hour": (cost * 60 / effective).quantize(Decimal("0.0001"), ROUND_HALF_UP),
    }
    assert {k: row[k] for k in expected} == expected
    assert cost == Decimal("465.77")
    assert row["rerun_compute_cost"] == job_cost(96)
    assert row["tokens_counted"] == 30_000_000
    assert row["cost_per_million_counted_tokens"] == (cost / 30).quantize(Decimal("0.0001"), ROUND_HALF_UP)


def test_batch_b8_and_the_unattributed_bucket(demo_run):
    b8 = demo_run.row("select * from marts.fct_batch_compute where batch_id = 'B-8'")
    # 2001 (failed: config error), 2002_1, 2002_2 (array), 2002_[3-4] (pending), 2003 (16 GPUs, 8 h), 2004,
    # 2005 (eval_rework), 2006 (cancelled after 30 min), 2007 (CPU only, no phase label). A job is what Slurm gives a
    # JobID: the pending 2002_[3-4] is two (2002_3, 2002_4), so 8 records + 2 tasks = 10 jobs.
    assert b8["jobs"] == 8 + 2
    # The pending 2002_[3-4] requests 16 GPU-hours for each of its two tasks.
    assert b8["requested_gpu_hours"] == 7 * 16 + 16 * 48 + 8
    assert b8["occupied_gpu_hours"] == 5 * 8 + 128 + 4
    assert b8["effective_compute_gpu_hours"] == hours(5 * 8 * 45 + 8 * 18 + 16 * 423)
    assert b8["failed_gpu_hours"] == 8 + 4
    assert b8["rerun_gpu_hours"] == 8
    assert b8["jobs_without_phase"] == 1
    assert (b8["steps_run"], b8["steps_counted"], b8["steps_discarded"]) == (30, 26, 4)
    assert (b8["step_seconds_median"], b8["step_seconds_max"], b8["step_max_number"]) == (480, 1500, 20)
    assert b8["compute_cost"] == 5 * job_cost(8) + job_cost(128) + job_cost(4) == Decimal("426.13")

    unattributed = demo_run.row("select * from marts.fct_batch_compute where batch_id = 'unattributed'")
    assert unattributed["jobs"] == 2  # 3001 has no batch label, 3002 names unregistered B-9
    assert unattributed["occupied_gpu_hours"] == 8  # 3002 is still running: nothing occupied yet
    assert unattributed["jobs_without_time_limit"] == 1
    assert unattributed["compute_cost"] == job_cost(8)


def test_phase_rows_add_up_to_batches(demo_run):
    training = demo_run.row("select * from marts.fct_phase_compute where batch_id = 'B-7' and phase = 'training'")
    assert training["occupied_gpu_hours"] == 160
    assert training["effective_compute_gpu_hours"] == hours(8 * 207 + 8 * 153 + 15 * 315 + 261)
    assert training["compute_cost"] == job_cost(64) + job_cost(96)
    assert (training["steps_run"], training["steps_counted"], training["step_max_number"]) == (33, 30, 17)
    by_batch = demo_run.query("""
        select p.batch_id, sum(p.compute_cost), max(b.compute_cost), sum(p.occupied_gpu_hours),
               max(b.occupied_gpu_hours), sum(p.steps_run), max(b.steps_run)
        from marts.fct_phase_compute p join marts.fct_batch_compute b using (batch_id) group by p.batch_id""")
    for batch_id, phase_cost, batch_cost, phase_hours, batch_hours, phase_steps, batch_steps in by_batch:
        assert (phase_cost, phase_hours, phase_steps) == (batch_cost, batch_hours, batch_steps), batch_id
    phases = {p for (p,) in demo_run.query("select distinct phase from marts.fct_phase_compute where batch_id = 'B-8'")}
    assert phases == {"exploration", "training", "validation", "analysis", "unlabelled"}


def test_runs_carry_reasons_and_lineage(demo_run):
    runs = {
        r[0]: r[1:]
        for r in demo_run.query("""
        select job_id, termination_reason, termination_category, is_failed, is_rerun, lineage_type, lineage_job_id,
               lineage_job_found, unattributed_reason, cancelled_by, samples
        from marts.fct_runs""")
    }
    assert runs["1002"][:4] == ("node_failure", "infrastructure", True, False)
    assert runs["1003"][:7] == ("completed", "completed", False, True, "restart_of", "1002", True)
    assert runs["2001"][:3] == ("config_error", "configuration_or_logic", True)
    assert runs["2005"][4:7] == ("continues", "2004", True)
    assert runs["2006"][1] == "cancelled" and runs["2006"][8] == "10304007"
    assert runs["2002_1"][9] == 8 * 60  # samples tagged with the raw id 2010 still find the array task
    assert runs["2002_[3-4]"][1] == "running"
    assert runs["3001"][7] == "no_batch_label"
    assert runs["3002"][7] == "batch_not_registered"
    assert "1003.batch" not in runs and "1003.extern" not in runs


def test_gpu_hour_price_for_november(demo_run):
    row = demo_run.row("select * from marts.fct_gpu_hour_price where month_start = '2026-11-01'")
    occupied = 188 + 172 + 8
    effective = Fraction(9162 + 8712 + 8 * 45, 60)
    assert row["gpus_in_service"] == 16
    assert row["available_gpu_hours"] == AVAILABLE_GPU_HOURS
    assert row["depreciation_cost"] == cents(DEPRECIATION)
    assert row["facility_cost"] == Decimal("3456.00")
    assert row["price_per_available_gpu_hour"] == Decimal("2.477502")
    assert row["occupied_gpu_hours"] == occupied
    assert row["measured_utilization"] == Decimal("0.825815")  # 303.9 / 368
    assert float(row["price_per_effective_gpu_hour"]) == pytest.approx(float(PRICE * occupied / effective), abs=1e-6)


def test_rows_in_equal_rows_staged_plus_quarantined_for_every_source(demo_run):
    files = demo_run.query("select source, source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files")
    sources = {f[0] for f in files}
    assert sources == {
        "batch_registry",
        "scheduler_jobs",
        "training_steps",
        "ledger_purchases",
        "ledger_facility",
        "device_samples",
        "serving_requests",
        "serving_replicas",
        "serving_monthly_costs",
        "task_outcomes",
        "timesheets",
        "service_invoices",
        "batch_rounds",
        "storage_inventory",
        "storage_prefix_rules",
        "storage_prices",
        "billing_focus",
        "scheduler_events",
    }
    for source, source_file, rows_in, staged, quarantined in files:
        assert rows_in == staged + quarantined, source_file
        (in_table,) = demo_run.query(f'select count(*) from raw."{source}" where source_file = ?', [source_file])[0]
        (in_quarantine,) = demo_run.query(
            "select count(*) from raw.quarantine where source = ? and source_file = ?", [source, source_file]
        )[0]
        assert (in_table, in_quarantine) == (staged, quarantined), source_file
    # The one corrupt sacct line is named by file, line and rule.
    assert demo_run.query("select source_file, line, rule from raw.quarantine") == [
        ("scheduler/sacct_2026-11.txt", 27, "start_timestamp")
    ]


def test_every_mart_row_records_its_contract_version(demo_run):
    marts = [
        t
        for (t,) in demo_run.query(
            "select table_name from information_schema.tables where table_schema = 'marts' order by 1"
        )
    ]
    assert len(marts) >= 13
    for table in marts:
        missing = demo_run.query(f'select count(*) from marts."{table}" where contract_version is null')[0][0]
        assert missing == 0, table


def test_the_printed_report_shows_the_bills(demo_run):
    import io

    from cost_pipeline.cli import report

    out = io.StringIO()
    report(demo_run.warehouse, out=out)
    text = out.getvalue()
    assert "scheduler/sacct_2026-11.txt, line 27: rule start_timestamp" in text
    b7 = next(line for line in text.splitlines() if line.strip().startswith("B-7"))
    assert b7.split()[-3:] == ["465.77", "15.5257", "3.0502"]
    assert "27440.00" in text and "4667.60" in text
    # The README shows the compute bill as the demo prints it, line for line: the unattributed row's requested hours
    # leave out job 3002 (no time limit), so the figure is marked and the note under the table says so.
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    heading = "Compute bill per batch (marts.fct_batch_compute):\n"
    shown = readme.split(heading, 1)[1].split("\n\n", 1)[0].splitlines()
    printed = text.split(heading, 1)[1].split("\n\n", 1)[0].splitlines()
    assert shown == [line.rstrip() for line in printed]  # the README's lines have no trailing blanks
    assert "  unattributed: 1 of 2 runs not in it (0 without ReqTRES, 1 without a time limit)" in shown


def test_the_build_keeps_its_artifacts_and_a_warnings_only_log(demo_run):
    """dbt's log file of the night's build has no debug events (every SQL statement, as JSON: some 15 % of dbt's
    time); the build's run_results.json, which explains a failed test, is still written."""
    import dagster as dg

    from cost_pipeline.dbt_setup import dbt_project

    with dg.DagsterInstance.from_config(str(demo_run.warehouse.with_name("warehouse.dagster"))) as instance:
        (run,) = instance.get_runs(filters=dg.RunsFilter(job_name="nightly_cost_refresh_job"))
    (build,) = (dbt_project.project_dir / "target").glob(f"cost_models-{run.run_id[:7]}-*")
    assert (build / "run_results.json").is_file()
    logged = (build / "dbt.log").read_text(encoding="utf-8") if (build / "dbt.log").exists() else ""
    assert '"level": "debug"' not in logged and '"level": "info"' not in logged
