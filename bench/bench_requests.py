"""Benchmark: the request part of a night (ingest + dbt) against a bare typed DuckDB load and the same allocation.

Run on demand (not part of the test suite):

    cd bench && nice ../.venv/bin/python bench_requests.py --requests 1000000

It writes the demo's landing folder with its request log replaced by ``--requests`` generated requests (the demo's
requests repeated through November, each a new id; three in four native JSON Lines, one in four LiteLLM spend-log
rows with their ``metadata`` object), one file per million; runs one whole night on it (setup, not timed); then
times, each in a process of its own, back to back on the same files:

- the pipeline: the Dagster assets ``raw/serving_requests``, ``stg_serving__requests`` and ``int_requests_costed``
  with their tests, as ``dagster asset materialize`` runs them (start-up included), every request file read again
  (the setup night's ledger of loaded files is forgotten first: a night reads only new files);
- the baseline: a bare typed DuckDB load of the same files (``read_json`` with the columns' types, the LiteLLM rows
  renamed) and the same largest-remainder allocation of each model-month's cost in SQL. Its per-request cents are
  checked against ``int_requests_costed`` (equal, or the benchmark fails).

It prints wall time, CPU time and peak RSS (the largest process) of each and the ratios. (The file is not named
``requests.py``: run from ``bench/``, that name would hide the ``requests`` package from every import.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_memory import BIN, forget_loaded, measured, print_ratio_table

from cost_pipeline import duckdb_session
from cost_pipeline.demo import write_demo_landing

REQUEST_ASSETS = "raw/serving_requests,staging/stg_serving__requests,intermediate/int_requests_costed"
PER_FILE = 1_000_000

# The demo's requests, repeated: copy r of template t is the r-th request of its kind, spread over November.
_GENERATED = """
    select t.request_id || '-' || r as request_id,
           timestamp '2026-11-01' + to_seconds(cast(r * 2591 % 2592000 as bigint)) as requested_at,
           t.model, t.tenant, t.business_line, t.input_tokens + r % 7 as input_tokens,
           t.output_tokens + (r % 5) * (t.output_tokens > 0)::int as output_tokens, t.cache_hit, t.latency_ms,
           t.latency_tier, t.status, t.task_id, t.attempt, t.escalated_to, t.human_handoff
    from read_json(?, format = 'newline_delimited') as t, range(?) as copies(r)
"""
_NATIVE = """
    select request_id, strftime(requested_at, '%Y-%m-%dT%H:%M:%S') as requested_at, model, tenant, business_line,
           input_tokens, output_tokens, cache_hit, latency_ms, latency_tier, status, task_id, attempt, escalated_to,
           human_handoff
    from generated where not litellm and part = ?
"""
_LITELLM = """
    select request_id, strftime(requested_at, '%Y-%m-%dT%H:%M:%S.%fZ') as "startTime",
           strftime(requested_at + to_milliseconds(latency_ms), '%Y-%m-%dT%H:%M:%S.%fZ') as "endTime", model,
           tenant as team_id, input_tokens as prompt_tokens, output_tokens as completion_tokens,
           case when cache_hit then 'True' else 'False' end as cache_hit, 0.0001 as spend,
           case status when 'completed' then 'success' else 'failure' end as status,
           {'task_id': task_id, 'attempt': attempt, 'business_line': business_line,
            'escalated_to': escalated_to, 'human_handoff': human_handoff} as metadata
    from generated where litellm and part = ?
"""


def write_requests(folder: Path, requests: int) -> int:
    """Replace the demo's request log with ``requests`` generated ones, one JSON Lines file per million."""
    demo = folder / "requests_2026-11.jsonl"
    con = duckdb_session.connect()
    (templates,) = con.execute(
        "select count(*) from read_json(?, format = 'newline_delimited')", [str(demo)]
    ).fetchone()
    copies = -(-requests // templates)
    con.execute(
        f"create table generated as select *, row_number() over () % 4 = 3 as litellm, "
        f"(row_number() over () - 1) // {PER_FILE} as part from ({_GENERATED}) limit {int(requests)}",
        [str(demo), copies],
    )
    demo.unlink()
    (parts,) = con.execute("select max(part) + 1 from generated").fetchone()
    for part in range(parts):
        for name, sql in (("native", _NATIVE), ("litellm", _LITELLM)):
            target = folder / f"{name}_{part:03d}.jsonl"
            con.execute(f"copy ({sql}) to '{target}' (format json)", [part])
    (written,) = con.execute("select count(*) from generated").fetchone()
    con.close()
    return written


BASELINE_SQL = """
create table costed as
with native as (
    select * from read_json($native, format = 'newline_delimited', columns = {
        'request_id': 'VARCHAR', 'requested_at': 'TIMESTAMP', 'model': 'VARCHAR', 'tenant': 'VARCHAR',
        'business_line': 'VARCHAR', 'input_tokens': 'BIGINT', 'output_tokens': 'BIGINT', 'cache_hit': 'BOOLEAN',
        'latency_ms': 'BIGINT', 'latency_tier': 'VARCHAR', 'status': 'VARCHAR', 'task_id': 'VARCHAR',
        'attempt': 'INTEGER', 'escalated_to': 'VARCHAR', 'human_handoff': 'BOOLEAN'})
),
litellm as (
    select request_id, timezone('UTC', "startTime") as requested_at, model, team_id as tenant,
           metadata.business_line, prompt_tokens as input_tokens, completion_tokens as output_tokens,
           cache_hit = 'True' as cache_hit,
           cast(date_diff('millisecond', "startTime", "endTime") as bigint) as latency_ms,
           cast(null as varchar) as latency_tier,
           case status when 'success' then 'completed' else 'failed' end as status, metadata.task_id,
           metadata.attempt, metadata.escalated_to, metadata.human_handoff
    from read_json($litellm, format = 'newline_delimited', columns = {
        'request_id': 'VARCHAR', 'startTime': 'TIMESTAMPTZ', 'endTime': 'TIMESTAMPTZ', 'model': 'VARCHAR',
        'team_id': 'VARCHAR', 'prompt_tokens': 'BIGINT', 'completion_tokens': 'BIGINT', 'cache_hit': 'VARCHAR',
        'status': 'VARCHAR', 'metadata': 'STRUCT(task_id VARCHAR, attempt INTEGER, business_line VARCHAR,
        escalated_to VARCHAR, human_handoff BOOLEAN)'})
),
requests as (
    select request_id, requested_at, model, input_tokens, output_tokens
    from (select * from native union all by name select * from litellm)
),
weighted as (
    select requests.request_id, cast(date_trunc('month', requests.requested_at) as date) as month_start,
           requests.model,
           case when $by_tokens = 1 then requests.input_tokens * $input_weight
                + requests.output_tokens * $output_weight else 1 end as weight,
           coalesce(costs.serving_cost_cents, 0) as total_cents
    from requests
    left join wh.intermediate.int_model_months_costed as costs
        on costs.month_start = cast(date_trunc('month', requests.requested_at) as date) and costs.model = requests.model
),
shares as (
    select *, sum(weight) over parts as weight_sum, count(*) over parts as part_count
    from weighted window parts as (partition by month_start, model)
),
exact as (
    select *, case when weight_sum > 0 then total_cents * 1.0 * weight / weight_sum
                   else total_cents * 1.0 / part_count end as exact_cents
    from shares
),
floored as (
    select *, floor(exact_cents) as floor_cents, exact_cents - floor(exact_cents) as remainder from exact
)
select request_id,
       cast(floor_cents + case when row_number() over (partition by month_start, model
                                                       order by remainder desc, request_id)
                                    <= total_cents - sum(floor_cents) over (partition by month_start, model)
                               then 1 else 0 end as bigint) as request_cost_cents
from floored
"""


def baseline(warehouse: Path, folder: Path, out: Path) -> None:
    """The bare load and allocation, into ``out``; the warehouse (read-only) gives the model-months' costs."""
    con = duckdb_session.connect(str(out))
    con.execute(f"attach '{warehouse}' as wh (read_only)")
    (version,) = con.execute("select max(contract_version) from wh.intermediate.int_requests_costed").fetchone()
    values = dict(
        con.execute(
            "select parameter_name, parameter_value from wh.staging.stg_contract__parameters "
            "where contract_version = ?",
            [version],
        ).fetchall()
    )
    params = {
        "by_tokens": float(values["serving_allocation_by_tokens"]),
        "input_weight": float(values["serving_input_token_weight"]),
        "output_weight": float(values["serving_output_token_weight"]),
        "native": str(folder / "native_*.jsonl"),
        "litellm": str(folder / "litellm_*.jsonl"),
    }
    con.execute(BASELINE_SQL, params)
    con.close()


def check_equal(warehouse: Path, out: Path) -> int:
    """Requests whose cents differ between int_requests_costed and the baseline (must be none); raises if any."""
    con = duckdb_session.connect(str(out), read_only=True)
    con.execute(f"attach '{warehouse}' as wh (read_only)")
    figures = "request_id, request_cost_cents"
    (differ,) = con.execute(
        f"select count(*) from ((select {figures} from wh.intermediate.int_requests_costed "
        f"except all select {figures} from costed) union all (select {figures} from costed "
        f"except all select {figures} from wh.intermediate.int_requests_costed))"
    ).fetchone()
    (requests,) = con.execute("select count(*) from costed").fetchone()
    con.close()
    if differ:
        raise SystemExit(f"the baseline's request cents differ from int_requests_costed in {differ} rows")
    return requests


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one, removed afterwards)")
    parser.add_argument("--baseline", nargs=3, metavar=("WAREHOUSE", "FOLDER", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        warehouse, folder, out = args.baseline
        baseline(Path(warehouse), Path(folder), Path(out))
        return
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-requests-"))
    try:
        landing = write_demo_landing(work / "landing")
        warehouse = work / "warehouse.duckdb"
        written = write_requests(landing / "requests", args.requests)
        env = {**os.environ, "COST_LANDING_DIR": str(landing), "COST_WAREHOUSE": str(warehouse)}
        env["DAGSTER_HOME"] = str(work)
        subprocess.run(
            [str(BIN / "cost-pipeline"), "run", "--landing", str(landing), "--warehouse", str(warehouse)],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        forget_loaded(warehouse, "serving_requests")  # the timed run loads every request file again
        pipeline = measured(
            [str(BIN / "dagster"), "asset", "materialize", "-m", "cost_pipeline.definitions"]
            + ["--select", REQUEST_ASSETS],
            env,
        )
        out = work / "baseline.duckdb"
        bare = measured(
            [sys.executable, __file__, "--baseline", str(warehouse), str(landing / "requests"), str(out)], env
        )
        requests = check_equal(warehouse, out)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{written:,} requests written, {requests:,} costed; per-request cents equal")
    print_ratio_table(("pipeline (ingest + dbt, requests)", pipeline), ("bare DuckDB load + allocation", bare))


if __name__ == "__main__":
    main()
