"""Every value checked for sense at ingest: each numeric column's domain (finite, sign, a range that fits the
warehouse), cross-field rules (end >= start, salvage <= price, a Kubernetes pod's allocated <= requested) and time
zones, on both ingest paths (pandas + pandera, and in DuckDB for device samples). A row breaking a rule is
quarantined with file, line, rule and a message saying what was expected, never the value; rows in = staged +
quarantined holds.

Loads run under a non-UTC host zone (Asia/Kolkata, +05:30) so a time that depends on the host's zone shows."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from cost_pipeline.contract import load_contract
from cost_pipeline.contract.schemas import (
    DEVICE_SAMPLE_BASE_COLUMNS,
    FRACTION,
    GPU_COUNT,
    QUANTITY,
    Col,
    SourceSchema,
)
from cost_pipeline.ingest.lib.records import ParsedFile
from cost_pipeline.ingest.lib.validate import validate_rows
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_named, sources
from tests.helpers import query

SAMPLE_HEADER = ",".join(name for name, _ in DEVICE_SAMPLE_BASE_COLUMNS)


pytestmark = pytest.mark.usefixtures("host_in_kolkata")  # the host is at +05:30 for every test here


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load(tmp_path: Path, source: str) -> tuple[Path, list[tuple]]:
    """Load one source from ``tmp_path/landing`` into a fresh warehouse; its quarantine (file, line, rule, message)."""
    warehouse = tmp_path / "w.duckdb"
    con = connect(warehouse, readable_dir=tmp_path / "landing")
    try:
        # The host is at +05:30; the session is UTC all the same (cost_pipeline/duckdb_session.py).
        assert con.execute("select current_setting('TimeZone')").fetchall() == [("UTC",)]
        report = load_named(con, tmp_path / "landing", source, load_contract())
    finally:
        con.close()
    assert report.conserved
    rows_in, staged, quarantined = query(
        warehouse,
        "select sum(rows_in), sum(rows_staged), sum(rows_quarantined) from raw.ingested_files where source = ?",
        [source],
    )[0]
    assert rows_in == staged + quarantined
    return warehouse, query(
        warehouse,
        "select source_file, line, rule, message from raw.quarantine where source = ? order by 1, 2",
        [source],
    )


def rules(quarantined: list[tuple]) -> list[tuple[int, str]]:
    return [(line, rule) for _, line, rule, _ in quarantined]


def test_a_salvage_value_above_the_purchase_price_is_quarantined(tmp_path):
    write(
        tmp_path / "landing" / "ledger" / "purchases.csv",
        "purchase_id,purchased_on,asset_class,description,quantity,unit_price,currency,gpus_per_unit,"
        "depreciation_years,salvage_value\n"
        "P-1,2026-01-05,gpu_server,ok,2,250000.00,USD,8,4,25000.00\n"
        "P-2,2026-01-05,gpu_server,salvage above price,2,250000.00,USD,8,4,260000.00\n",
    )
    warehouse, quarantined = load(tmp_path, "ledger_purchases")
    assert query(warehouse, "select purchase_id from raw.ledger_purchases") == [("P-1",)]
    assert rules(quarantined) == [(3, "salvage_value.at_most_unit_price")]
    assert "no higher than the unit price" in quarantined[0][3] and "260000" not in quarantined[0][3]


def test_nan_in_an_nvlink_column_is_quarantined_in_the_database(tmp_path):
    def sample(minute: int, tx: str) -> str:
        return f"2026-11-01T00:0{minute}:00,gpu-a,0,1,0.02,0.02,0.01,{tx},1e9,300"

    write(
        tmp_path / "landing" / "telemetry" / "a.csv",
        "\n".join(
            [SAMPLE_HEADER, sample(0, "1e9"), sample(1, "NaN"), sample(2, "inf"), sample(3, "1e300"), sample(4, "-1")]
        )
        + "\n",
    )
    warehouse, quarantined = load(tmp_path, "device_samples")
    assert query(warehouse, "select source_line from raw.device_samples") == [(2,)]
    # Each rule names what broke: NaN and infinity are not finite, 1e300 too large, -1 negative.
    column = "DCGM_FI_PROF_NVLINK_TX_BYTES"
    assert rules(quarantined) == [
        (3, f"{column}.not_finite"),
        (4, f"{column}.not_finite"),
        (5, f"{column}.too_large"),
        (6, f"{column}.non_negative"),
    ]
    assert all("a finite non-negative rate such as 1000000000" in message for *_, message in quarantined)


def test_a_fractional_gpu_index_is_quarantined_not_rounded_to_another_gpu(tmp_path):
    write(
        tmp_path / "landing" / "telemetry" / "a.csv",
        "\n".join(
            [
                SAMPLE_HEADER,
                "2026-11-01T00:00:00,gpu-a,1,1,0.9,0.8,0.5,1e8,1e8,300",
                "2026-11-01T00:01:00,gpu-a,1.5,1,0.9,0.8,0.5,1e8,1e8,300",
            ]
        )
        + "\n",
    )
    warehouse, quarantined = load(tmp_path, "device_samples")
    assert query(warehouse, "select source_line, gpu from raw.device_samples") == [(2, 1)]
    assert rules(quarantined) == [(3, "gpu.whole_number")]


def test_a_negative_cost_rate_in_timesheets_is_quarantined(tmp_path):
    write(
        tmp_path / "landing" / "timesheets" / "harvest.csv",
        "Date,Project Code,Task,Hours,First Name,Last Name,Cost Rate,Currency\n"
        "2026-11-02,B-7,Training runs,3,Alice,Chen,100.00,USD\n"
        "2026-11-03,B-7,Training runs,3,Alice,Chen,-100.00,USD\n",
    )
    warehouse, quarantined = load(tmp_path, "timesheets")
    assert query(warehouse, "select count(*) from raw.timesheets") == [(1,)]
    assert rules(quarantined) == [(3, "cost_rate.non_negative")]
    message = quarantined[0][3]
    assert "a finite non-negative amount such as 12.34" in message and "100" not in message


def test_a_step_ending_before_it_starts_is_quarantined(tmp_path):
    steps = [
        {"batch_id": "B-1", "job_id": "1", "step": 1, "started_at": "2026-11-01T00:00:00Z",
         "ended_at": "2026-11-01T00:01:00Z", "committed": True},
        {"batch_id": "B-1", "job_id": "1", "step": 2, "started_at": "2026-11-01T00:02:00Z",
         "ended_at": "2026-11-01T00:01:30Z", "committed": True},
    ]  # fmt: skip
    write(tmp_path / "landing" / "steps" / "s.jsonl", "\n".join(json.dumps(s) for s in steps) + "\n")
    warehouse, quarantined = load(tmp_path, "training_steps")
    assert query(warehouse, "select step from raw.training_steps") == [(1,)]
    assert rules(quarantined) == [(2, "ended_at.not_before_started_at")]
    assert "ended_at at or after started_at" in quarantined[0][3]


@pytest.mark.parametrize(
    ("source", "path", "header", "good", "bad"),
    [
        (
            "batch_rounds",
            "registry/rounds.csv",
            "batch_id,round,started_at,ended_at,evidence",
            "B-1,1,2026-11-02T00:00:00,2026-11-03T00:00:00,first",
            "B-1,2,2026-11-04T00:00:00,2026-11-03T12:00:00,second",
        ),
        (
            "serving_replicas",
            "serving/replicas.csv",
            "replica_id,model,gpus,started_at,ended_at,gpu_hour_price",
            "R-1,m,8,2026-11-01T00:00:00,2026-12-01T00:00:00,4.00",
            "R-2,m,2,2026-11-15T00:00:00,2026-11-14T23:59:59,",
        ),
    ],
    ids=["trial-round", "serving-replica"],
)
def test_a_round_or_replica_ending_before_it_starts_is_quarantined(tmp_path, source, path, header, good, bad):
    write(tmp_path / "landing" / path, f"{header}\n{good}\n{bad}\n")
    warehouse, quarantined = load(tmp_path, source)
    assert len(query(warehouse, f"select * from raw.{source}")) == 1
    assert rules(quarantined) == [(3, "ended_at.not_before_started_at")]
    assert "ended_at at or after started_at" in quarantined[0][3]


_TODAY = datetime.now(UTC).date()


@pytest.mark.parametrize(
    ("source", "path", "header", "good", "bad", "rule"),
    [
        (
            "ledger_facility",
            "ledger/facility.csv",
            "month,item,amount,currency",
            f"{_TODAY:%Y-%m},rent,2016.00,USD",
            "2099-01-01,rent,2016.00,USD",
            "month.after_night",
        ),
        (
            "serving_monthly_costs",
            "serving/monthly_costs.csv",
            "month,item,amount",
            f"{_TODAY:%Y-%m-01},operations,500.00",
            "2099-01,operations,500.00",
            "month.after_night",
        ),
        (
            "ledger_purchases",
            "ledger/purchases.csv",
            "purchase_id,purchased_on,asset_class,description,quantity,unit_price,currency,gpus_per_unit,"
            "depreciation_years,salvage_value",
            f"P-1,{_TODAY:%Y-%m-%d},gpu_server,today,2,250000.00,USD,8,4,0.00",
            "P-2,2099-01-05,gpu_server,not bought yet,2,250000.00,USD,8,4,0.00",
            "purchased_on.after_night",
        ),
    ],
    ids=["facility-month", "serving-cost-month", "purchase-date"],
)
def test_a_ledger_month_or_purchase_after_the_night_is_quarantined(tmp_path, source, path, header, good, bad, rule):
    """A ledger line for a month starting after the night (rent for 2099-01 counted in today's GPU-hour price and
    serving costs), or a purchase dated after it (a server not yet bought depreciated), is no cost yet: quarantined
    with file, line and rule, as a service month after the night is. The night's own month and date count."""
    write(tmp_path / "landing" / path, f"{header}\n{good}\n{bad}\n")
    warehouse, quarantined = load(tmp_path, source)
    assert len(query(warehouse, f"select * from raw.{source}")) == 1
    assert [(file.rsplit("/", 1)[-1], line, rule) for file, line, rule, _ in quarantined] == [
        (path.rsplit("/", 1)[-1], 3, rule)
    ]
    assert "no later than" in quarantined[0][3] and "2099" not in quarantined[0][3]


FOCUS_HEADER = (
    "ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeClass,BilledCost,EffectiveCost,ConsumedQuantity\n"
)


def test_a_focus_credit_may_be_negative_and_a_negative_usage_charge_is_quarantined(tmp_path):
    write(
        tmp_path / "landing" / "billing" / "focus.csv",
        FOCUS_HEADER + "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Usage,,10.00,10.00,4\n"
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Credit,,-2.50,-2.50,\n"
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Usage,Correction,-1.00,-1.00,\n"
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Usage,,-0.10,-0.10,-1\n"  # a usage reversal (Azure)
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Usage,,-5.00,-5.00,4\n"  # a negative usage charge
        "2026-11-02T00:00:00Z,2026-11-01T00:00:00Z,Usage,,1.00,1.00,1\n",  # a charge period ending before it starts
    )
    warehouse, quarantined = load(tmp_path, "billing_focus")
    assert query(warehouse, "select source_line from raw.billing_focus order by 1") == [(2,), (3,), (4,), (5,)]
    assert rules(quarantined) == [(6, "focus_amount.sign"), (7, "charge_period_end.not_before_charge_period_start")]
    assert "unless its ChargeCategory is Adjustment or Credit, its ChargeClass is Correction" in quarantined[0][3]


def test_a_positive_focus_credit_is_quarantined_unless_it_is_a_correction(tmp_path):
    """A Credit tagged +50.00 loaded and added 50.00 to its batch's storage cost (12.00 -> 62.00): the sign rule let a
    credit be negative but never required it. FOCUS lets a correction of an earlier period (ChargeClass Correction)
    reverse a credit, so that one may be positive; an Adjustment may be either sign."""
    write(
        tmp_path / "landing" / "billing" / "focus.csv",
        FOCUS_HEADER + "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Credit,,-50.00,-50.00,\n"
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Credit,,50.00,50.00,\n"  # a credit that charges
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Credit,,0.00,50.00,\n"  # positive in EffectiveCost only
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Credit,Correction,50.00,50.00,\n"  # reverses an earlier credit
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Credit,,0.00,0.00,\n"
        "2026-11-01T00:00:00Z,2026-11-02T00:00:00Z,Adjustment,,50.00,50.00,\n",
    )
    warehouse, quarantined = load(tmp_path, "billing_focus")
    assert query(warehouse, "select source_line from raw.billing_focus order by 1") == [(2,), (5,), (6,), (7,)]
    assert rules(quarantined) == [(3, "focus_credit.sign"), (4, "focus_credit.sign")]
    expects = "no positive amount on a line whose ChargeCategory is Credit, unless its ChargeClass is Correction"
    assert expects in quarantined[0][3]


def test_a_device_sample_time_with_an_offset_is_converted_to_utc_whatever_the_host_zone(tmp_path):
    write(
        tmp_path / "landing" / "telemetry" / "a.csv",
        "\n".join(
            [
                SAMPLE_HEADER,
                "2026-11-01T05:00:00+05:00,gpu-a,0,1,0.9,0.8,0.5,1e8,1e8,300",
                "2026-11-01T00:01:00Z,gpu-a,0,1,0.9,0.8,0.5,1e8,1e8,300",
                "2026-11-01 00:02:00,gpu-a,0,1,0.9,0.8,0.5,1e8,1e8,300",
            ]
        )
        + "\n",
    )
    warehouse, quarantined = load(tmp_path, "device_samples")
    assert quarantined == []
    assert [str(t) for (t,) in query(warehouse, 'select "timestamp" from raw.device_samples order by 1')] == [
        "2026-11-01 00:00:00",
        "2026-11-01 00:01:00",
        "2026-11-01 00:02:00",
    ]


def test_an_offset_is_honoured_on_the_pandas_path_too_whatever_the_host_zone(tmp_path):
    write(
        tmp_path / "landing" / "registry" / "rounds.csv",
        "batch_id,round,started_at,ended_at,evidence\n"
        "B-1,1,2026-11-01T05:30:00+05:30,2026-11-01T01:00:00Z,\n"
        "B-1,2,2026-11-01 02:00:00,2026-11-01T03:00:00,\n",
    )
    warehouse, quarantined = load(tmp_path, "batch_rounds")
    assert quarantined == []
    assert [tuple(map(str, r)) for r in query(warehouse, "select started_at, ended_at from raw.batch_rounds")] == [
        ("2026-11-01 00:00:00", "2026-11-01 01:00:00"),
        ("2026-11-01 02:00:00", "2026-11-01 03:00:00"),
    ]


def _parquet(path: Path, sql: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    try:
        con.execute(f"copy ({sql}) to '{path}' (format parquet)")
    finally:
        con.close()


def test_an_integer_time_column_in_parquet_is_refused_not_read_as_1970(tmp_path):
    requests = tmp_path / "landing" / "requests" / "r.parquet"
    _parquet(
        requests,
        "select 'r-1' as request_id, 1764547200 as requested_at, 'm' as model, 10 as input_tokens, "
        "5 as output_tokens, false as cache_hit, 'completed' as status, 1 as attempt, false as human_handoff",
    )
    warehouse, quarantined = load(tmp_path, "serving_requests")
    assert query(warehouse, "select count(*) from raw.serving_requests") == [(0,)]
    assert rules(quarantined) == [(1, "requested_at.time_unit")]
    assert "names no unit" in quarantined[0][3]
    samples = tmp_path / "landing" / "telemetry" / "s.parquet"
    _parquet(
        samples,
        "select 1764547200 as timestamp, 'gpu-a' as hostname, 0 as gpu, '1' as job_id, "
        + ", ".join(f"0.5 as {name}" for name, _ in DEVICE_SAMPLE_BASE_COLUMNS[4:]),
    )
    warehouse, quarantined = load(tmp_path, "device_samples")
    assert rules(quarantined) == [(0, "timestamp.time_unit")]


def test_a_time_column_whose_unit_the_contract_names_is_converted():
    schema = SourceSchema("timed", (Col("at", "TIMESTAMP", unit="ms"), Col("n", "BIGINT")))
    parsed = ParsedFile(Path("t.jsonl"), "0" * 64, rows_in=1, rows=[{"at": 1764547200000, "n": 1, "source_line": 1}])
    valid = validate_rows(parsed, schema)
    assert parsed.rejections == [] and str(valid.loc[0, "at"]) == "2025-12-01 00:00:00"


def test_an_overflowing_value_is_quarantined_before_dbt_can_overflow(tmp_path):
    requests = [
        {"request_id": "r-1", "requested_at": "2026-11-01T00:00:00Z", "model": "m", "input_tokens": 10,
         "output_tokens": 5, "cache_hit": False, "latency_ms": 800, "status": "completed", "attempt": 1,
         "human_handoff": False},
        {"request_id": "r-2", "requested_at": "2026-11-01T00:00:00Z", "model": "m", "input_tokens": 10,
         "output_tokens": 9_000_000_000_000_000_000, "cache_hit": False, "latency_ms": 800, "status": "completed",
         "attempt": 1, "human_handoff": False},
    ]  # fmt: skip
    write(tmp_path / "landing" / "requests" / "r.jsonl", "\n".join(json.dumps(r) for r in requests) + "\n")
    warehouse, quarantined = load(tmp_path, "serving_requests")
    assert query(warehouse, "select request_id from raw.serving_requests") == [("r-1",)]
    assert rules(quarantined) == [(2, "output_tokens.too_large")]  # positive: too large, not negative
    assert "from 0 to 1,000,000,000,000" in quarantined[0][3] and "9000000" not in quarantined[0][3]


def test_nan_in_a_nullable_number_is_not_taken_for_a_blank(tmp_path):
    write(
        tmp_path / "landing" / "tasks" / "outcomes.csv",
        "task_id,task_category,succeeded,judged_by,human_minutes,human_cost_per_hour\n"
        "t-1,x,true,a,,\nt-2,x,true,a,NaN,\nt-3,x,true,a,-Infinity,\n",
    )
    warehouse, quarantined = load(tmp_path, "task_outcomes")
    assert query(warehouse, "select task_id from raw.task_outcomes") == [("t-1",)]
    assert rules(quarantined) == [(3, "human_minutes.not_finite"), (4, "human_minutes.not_finite")]


def test_a_hand_off_s_minutes_without_a_cost_per_hour_are_quarantined(tmp_path):
    """90 minutes of a person's time with no hourly cost would cost 0.00 and understate the cost per successful
    task (R14); no minutes, or none spent, need no rate."""
    write(
        tmp_path / "landing" / "tasks" / "outcomes.csv",
        "task_id,task_category,succeeded,judged_by,human_minutes,human_cost_per_hour\n"
        "t-1,x,true,human,90,60.00\nt-2,x,true,human,90,\nt-3,x,true,a,0,\nt-4,x,true,a,,\n",
    )
    warehouse, quarantined = load(tmp_path, "task_outcomes")
    assert query(warehouse, "select task_id from raw.task_outcomes order by 1") == [("t-1",), ("t-3",), ("t-4",)]
    assert rules(quarantined) == [(3, "handoff_cost_per_hour")]
    assert "human_cost_per_hour when human_minutes are more than 0" in quarantined[0][3]


@pytest.mark.parametrize(
    ("domain", "value", "rule"),
    [
        (GPU_COUNT, "8", None),
        (GPU_COUNT, "-1", "non_negative"),
        (GPU_COUNT, "2147483648", "too_large"),
        (GPU_COUNT, "NaN", "not_finite"),
        (GPU_COUNT, "1.5", "whole_number"),
        (GPU_COUNT, "2.0", None),
        (GPU_COUNT, "-Infinity", "not_finite"),
        (FRACTION, "1.5", "unit_range"),
        (FRACTION, "-0.5", "unit_range"),
        (QUANTITY, "-1e16", "out_of_range"),
        (QUANTITY, "-1", None),
    ],
)
def test_both_ingest_paths_name_the_same_rule_for_what_broke(domain, value, rule):
    """The pandas path (``Domain.broken``, behind its pandera checks) and the in-database path (``sql_breaks``)."""
    assert domain.broken(value) == rule
    assert domain.admits(value) is (rule is None)
    failed = [
        name
        for name, check in zip(domain.rules(), domain.checks(), strict=True)
        if not check(pd.Series([value])).check_passed
    ]
    assert failed == ([] if rule is None else [rule])
    con = duckdb.connect()
    try:
        found = [
            name
            for name, condition in domain.sql_breaks("v", nullable=True)
            if con.execute(f"select {condition} from (select ? as v)", [value]).fetchone()[0]
        ]
    finally:
        con.close()
    assert found[:1] == ([] if rule is None else [rule])


SACCT_HEADER = (
    "JobID|JobIDRaw|JobName|Account|Partition|User|State|ExitCode|Submit|Start|End|Elapsed|Timelimit|NNodes|"
    "NodeList|ReqTRES|AllocTRES|Comment"
)


def _sacct_line(job: str, requested: int, allocated: int) -> str:
    return (
        f"{job}|{job}|train|ml|gpu|ann|COMPLETED|0:0|2026-11-01T00:00:00|2026-11-01T00:00:00|2026-11-01T01:00:00|"
        f"01:00:00|02:00:00|1|gpu-a|billing={requested},cpu={requested},gres/gpu={requested},node=1|"
        f"billing={allocated},cpu={allocated},gres/gpu={allocated},node=1|batch=B-1;phase=training"
    )


def test_a_sacct_job_allocated_more_gpus_than_it_requested_is_kept(tmp_path):
    """Slurm allocates every GPU of a node it gives a job whole (--exclusive, OverSubscribe=EXCLUSIVE): ReqTRES
    gres/gpu=4, AllocTRES gres/gpu=8. The job held the 8 and is charged for them, so its row loads; a count past
    the GPU count's domain is still refused."""
    lines = [SACCT_HEADER, _sacct_line("101", 8, 8), _sacct_line("102", 4, 8), _sacct_line("103", 16, 8)]
    lines.append(_sacct_line("104", 4, 8).replace("gres/gpu=8", "gres/gpu=2000000"))
    write(tmp_path / "landing" / "scheduler" / "sacct.txt", "\n".join(lines) + "\n")
    warehouse, quarantined = load(tmp_path, "scheduler_jobs")
    staged = query(warehouse, "select job_id, gpus_requested, gpus_allocated from raw.scheduler_jobs order by 1")
    assert staged == [("101", 8, 8), ("102", 4, 8), ("103", 16, 8)]
    assert rules(quarantined) == [(5, "gpus_allocated.too_large")]


def test_a_kubernetes_pod_allocated_more_gpus_than_it_requested_is_quarantined(tmp_path):
    """Kubernetes never overcommits a GPU (an extended resource: request equals limit) and the device plugin hands a
    pod exactly the GPUs it requested: an event saying more were allocated is the exporter's error."""
    events = [
        {"job_id": job, "event": "start", "at": "2026-11-01T00:00:00Z", "gpus_requested": requested,
         "gpus_allocated": allocated, "labels": {"batch": "B-1", "phase": "training"}}
        for job, requested, allocated in (("k-1", 8, 8), ("k-2", 4, 8), ("k-3", 8, 4), ("k-4", None, 8))
    ]  # fmt: skip
    write(tmp_path / "landing" / "scheduler" / "events.jsonl", "\n".join(json.dumps(e) for e in events) + "\n")
    warehouse, quarantined = load(tmp_path, "scheduler_events")
    assert query(warehouse, "select job_id from raw.scheduler_events order by 1") == [("k-1",), ("k-3",), ("k-4",)]
    assert rules(quarantined) == [(2, "gpus_allocated.at_most_requested")]


NUMERIC_TYPE = re.compile(r"(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|DOUBLE|FLOAT|REAL|DECIMAL\(\d+,\d+\))")
# A numeric column without a domain, and the check of its own that bounds it instead (a timesheet's hours: a day's).
BOUNDED_BY_A_CHECK = {("timesheets", "hours"): "hours_of_a_day"}


def _numeric_columns() -> list[tuple[str, str, object]]:
    """Every numeric raw column of every source: (source, column, its declared domain or None)."""
    contract, columns = load_contract(), []
    for name, source in sources().items():
        loader = source.loader
        if hasattr(loader, "schema"):
            declared = [(c.name, c.sql_type, c.domain) for c in loader.schema(contract).columns]
        else:
            declared = [(column, sql_type, loader.domains.get(column)) for column, sql_type in loader.columns]
        columns += [(name, c, domain) for c, sql_type, domain in declared if NUMERIC_TYPE.fullmatch(sql_type)]
    return columns


def test_every_numeric_column_of_every_source_declares_its_domain():
    """The contract states each numeric column's domain (finite, sign, a range that fits the warehouse type): a
    column added without one fails here, not in dbt on a bad night."""
    numeric = _numeric_columns()
    assert len(numeric) > 60  # the registry was read, every source's columns
    undeclared = {(source, column) for source, column, domain in numeric if domain is None}
    assert undeclared == set(BOUNDED_BY_A_CHECK)
    schema = sources()["timesheets"].loader.schema(load_contract())
    (check,) = next(c for c in schema.columns if c.name == "hours").checks
    assert check.name == BOUNDED_BY_A_CHECK[("timesheets", "hours")]
    for value in ("-1", "NaN", "inf", "1e309", "24.5", "99999999999999999999"):
        assert not pd.Series([value]).map(check._check_fn).all(), value
    assert pd.Series(["0", "7.5", "24"]).map(check._check_fn).all()


def test_allocated_at_most_requested_where_a_request_is_stated():
    from cost_pipeline.contract.schemas import ALLOCATED_AT_MOST_REQUESTED as rule

    def row(requested, allocated):
        return pd.Series({"gpus_requested": requested, "gpus_allocated": allocated})

    assert not rule.holds(row(8, 16))  # more than asked for: quarantined
    assert rule.holds(row(16, 8)) and rule.holds(row(8, 8))
    assert rule.holds(row(0, 16))  # a job step: sacct states no request, its GPUs are the allocation's
    assert rule.holds(row(None, 16))


def test_one_bad_value_quarantines_its_own_row_not_the_whole_column(tmp_path):
    """pandera coerces a column as a whole: ``1.5`` among whole numbers, or ``2`` among booleans, used to
    quarantine every row of the file under ``coerce_dtype``. Each value is judged on its own: ``1`` is true (as
    ``"1"`` is in a CSV and as it would be alone in a file), ``2`` and ``1.5`` are refused, each on its line."""
    base = {"requested_at": "2026-11-01T00:00:00Z", "model": "m", "input_tokens": 10, "output_tokens": 5,
            "cache_hit": False, "latency_ms": 800, "status": "completed", "attempt": 1,
            "human_handoff": False}  # fmt: skip
    changes = [{}, {"cache_hit": 1}, {"input_tokens": 1.5}, {}, {"cache_hit": 2}, {"attempt": "x"}, {}]
    requests = [dict(base, request_id=f"r-{n}", **change) for n, change in enumerate(changes, start=1)]
    write(tmp_path / "landing" / "requests" / "r.jsonl", "\n".join(json.dumps(r) for r in requests) + "\n")
    warehouse, quarantined = load(tmp_path, "serving_requests")
    staged = query(warehouse, "select request_id, cache_hit from raw.serving_requests order by request_id")
    assert staged == [("r-1", False), ("r-2", True), ("r-4", False), ("r-7", False)]
    assert rules(quarantined) == [
        (3, "input_tokens.coerce_dtype"),
        (5, "cache_hit.coerce_dtype"),
        (6, "attempt.coerce_dtype"),
    ]
    assert quarantined[0][0].endswith("r.jsonl") and "whole number" in quarantined[0][3]


def test_a_blank_text_in_a_request_is_absent(tmp_path):
    """Go gateways and many JSON serialisers write "" (or spaces) for an unset field. In either shape a blank text is
    absent: an optional field is null (a blank latency tier was quarantined under ``latency_tier.isin``, the whole
    request lost; a blank task, escalation or tenant was a task, an escalation and a tenant named ''), and a blank
    model, request id or status is quarantined as a missing one is. SQL maps the lines it vouches for as the pandas
    path (``request_row``) maps them."""
    from cost_pipeline.ingest.request_rows import request_row

    base = {"requested_at": "2026-11-01T00:00:00Z", "model": "m", "input_tokens": 10, "output_tokens": 5,
            "cache_hit": False, "latency_ms": 2500, "status": "completed", "attempt": 1,
            "human_handoff": False}  # fmt: skip
    litellm = {"startTime": "2026-11-01T00:00:00Z", "endTime": "2026-11-01T00:00:01Z", "model": "m",
               "prompt_tokens": 10, "completion_tokens": 5}  # fmt: skip
    lines = [
        dict(base, request_id="r-1", tenant="", business_line=" ", task_id="\t", escalated_to="", latency_tier=""),
        dict(base, request_id="r-2", model=""),
        dict(base, request_id="r-3", model="  "),
        dict(base, request_id=" "),
        dict(base, request_id="r-5", status=""),
        dict(
            litellm,
            request_id="l-1",
            team_id="",
            status="  ",
            metadata={"task_id": "", "escalated_to": " ", "business_line": "", "attempt": 2},
        ),  # fmt: skip
        dict(litellm, request_id="l-2", model=" \n"),
    ]
    write(tmp_path / "landing" / "requests" / "r.jsonl", "\n".join(json.dumps(r) for r in lines) + "\n")
    warehouse, quarantined = load(tmp_path, "serving_requests")
    columns = ["request_id", "model", "tenant", "business_line", "latency_tier", "status", "task_id", "escalated_to"]
    staged = query(warehouse, f"select {', '.join(columns)} from raw.serving_requests order by request_id")
    assert staged == [
        ("l-1", "m", None, None, None, "completed", None, None),
        ("r-1", "m", None, None, None, "completed", None, None),
    ]
    mapped = [request_row(lines[5]), request_row(lines[0])]  # the pandas path maps them alike
    assert [tuple(row[c] for c in columns) for row in mapped] == staged
    assert rules(quarantined) == [
        (2, "model.not_nullable"),
        (3, "model.not_nullable"),
        (4, "request_id.not_nullable"),
        (5, "status.not_nullable"),
        (7, "model.not_nullable"),
    ]


# Date-time text that Python's datetime.fromisoformat reads and the SQL path (utc_timestamp_sql) does not, or the
# other way round: the same text must be a time in every source or in none.
COMPACT_OR_OUT_OF_RANGE_TIMES = [
    "20261102T090000",  # compact (basic) ISO 8601
    "20261102",
    "2026-11-02T0900",
    "2026-W45-1",  # week date
    "2026-11-02T09",  # an hour alone
    "2026-11-02T09:00:00,5",  # a comma before the fraction
    "2026-11-02T09:00:00+05:30:00",  # an offset with seconds
    "2026-11-02t09:00:00",
    "\t2026-11-02T09:00:00",  # a tab is no space SQL trims
    "2026-11-02T24:00:00",  # DuckDB: the next day
    "2026-11-02T09:00:00+24:00",  # DuckDB: a day's offset
    "2026-11-02T09:00:00+05:99",
    "0000-01-01",  # DuckDB: 1 BC
]
ISO_TIMES = {
    "2026-11-02T09:00:00.123+0530": "2026-11-02 03:30:00.123000",
    "2026-11-02T09:00:00+05:30": "2026-11-02 03:30:00",
    "2026-11-02T09:00-05": "2026-11-02 14:00:00",
    "2026-11-02 09:00": "2026-11-02 09:00:00",
    "2026-11-02T23:59:59.123456789Z": "2026-11-02 23:59:59.123456",
    "2026-11-02T09:00:00+23:59": "2026-11-01 09:01:00",
    "\u00a02026-11-02 ": "2026-11-02 00:00:00",  # a no-break space is one SQL's trim strips
    "0001-01-01": "0001-01-01 00:00:00",
}


def test_python_and_sql_read_the_same_text_as_the_same_time_or_refuse_it_both():
    from datetime import datetime

    from cost_pipeline.ingest.lib.timestamps import utc_naive, utc_timestamp_sql

    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'Asia/Kolkata'")
        for text in [*COMPACT_OR_OUT_OF_RANGE_TIMES, *ISO_TIMES]:
            (sql,) = con.execute(f"select {utc_timestamp_sql('$1')}", [text]).fetchone()
            python = utc_naive(text)
            expected = ISO_TIMES.get(text)
            assert (str(python) if isinstance(python, datetime) else None) == expected, text
            assert (None if sql is None else str(sql)) == expected, text
    finally:
        con.close()


def test_a_compact_iso_time_is_quarantined_on_the_pandas_path_as_in_the_database(tmp_path):
    """``20261102T090000`` is ISO 8601 (basic format) and Python's fromisoformat reads it; the device samples, read
    in DuckDB, refuse it. A trial round's time so written is quarantined with its file, line and the rule any other
    unreadable time gets, and a device sample's as it was."""
    write(
        tmp_path / "landing" / "registry" / "rounds.csv",
        "batch_id,round,started_at,ended_at,evidence\n"
        "B-1,1,2026-11-02T09:00:00,2026-11-02T10:00:00,\n"
        "B-1,2,20261102T110000,2026-11-02T12:00:00,\n"
        "B-1,3,2026-11-02T13:00:00,2026-W45-1,\n"
        "B-1,4,2026-11-02T14:00:00,yesterday,\n",
    )
    warehouse, quarantined = load(tmp_path, "batch_rounds")
    assert query(warehouse, "select round from raw.batch_rounds") == [(1,)]
    assert [(file, line, rule) for file, line, rule, _ in quarantined] == [
        ("registry/rounds.csv", 3, "started_at.coerce_dtype"),
        ("registry/rounds.csv", 4, "ended_at.coerce_dtype"),
        ("registry/rounds.csv", 5, "ended_at.coerce_dtype"),  # what any unreadable time gets
    ]
    write(
        tmp_path / "landing" / "telemetry" / "a.csv",
        f"{SAMPLE_HEADER}\n20261102T090000,gpu-a,0,1,0.9,0.8,0.5,1e8,1e8,300\n",
    )
    _, samples = load(tmp_path, "device_samples")
    assert [(file, line, rule) for file, line, rule, _ in samples] == [("telemetry/a.csv", 2, "timestamp.parseable")]
