"""Benchmark: the request part of a night (ingest + dbt) against a bare typed DuckDB load and the same allocation.

Run on demand (not part of the test suite):

    cd bench && nice ../.venv/bin/python bench_requests.py --requests 1000000

It writes the demo's landing folder with its request log replaced by ``--requests`` generated requests (the demo's
requests repeated through November, each a new id; three in four native JSON Lines, one in four LiteLLM spend-log
rows with their ``metadata`` object), one file per million; runs one whole night on it (setup, not timed); then
times, each in a process of its own, back to back on the same files:

- the pipeline: the Dagster assets ``raw/serving_requests``, ``stg_serving__requests`` and ``int_requests_costed``
  with their tests, as ``dagster asset materialize`` runs them (start-up included), every request file read again
  and every month built again (the setup night's ledger of loaded files and the request tables' kept inputs are
  forgotten first: a night reads only new files and builds only the months they change);
- the baseline: a bare typed DuckDB load of the same files (``read_json`` with the columns' types, the LiteLLM rows
  renamed) and the same largest-remainder allocation of each model-month's cost in SQL. Its per-request cents are
  checked against ``int_requests_costed`` (equal, or the benchmark fails).

It prints wall time, CPU time and peak RSS (the largest process) of each and the ratios.

With ``--days N`` (``--requests`` then a day's), it measures instead what a night costs as requests accumulate: night
1 loads N days of requests (the last days of October) into the demo's warehouse, night 2 adds one more day
(1 November); both time the request path as above, and it prints night 2's ratio to night 1:

    cd bench && nice ../.venv/bin/python bench_requests.py --requests 1000000 --days 5 (The file is not named
``requests.py``: run from ``bench/``, that name would hide the ``requests`` package from every import.)
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from bench_memory import BIN, forget_loaded, measured, print_ratio_table

from cost_pipeline import duckdb_session
from cost_pipeline.demo import write_demo_landing

# The request path: the raw asset, what the request models are built from tonight (int_requests_inputs, without
# which they build every month) and the two models, incremental by month.
# The second-night mode's figures, one line per run (kept in the repository, as results.csv keeps the cluster-day's).
NIGHTS_RESULTS = Path(__file__).resolve().parent / "results_requests.csv"
NIGHTS_COLUMNS = [
    "measured_at",
    "commit",
    "requests_per_day",
    "days",
    "night1_wall_s",
    "night1_cpu_s",
    "night1_rss_mb",
    "night2_wall_s",
    "night2_cpu_s",
    "night2_rss_mb",
    "whole_wall_s",
    "whole_cpu_s",
    "whole_rss_mb",
    "ratio",
]
REQUEST_ASSETS = (
    "raw/serving_requests,intermediate/int_requests_inputs,staging/stg_serving__requests,"
    "intermediate/int_requests_costed"
)
PER_FILE = 1_000_000

# The demo's requests, repeated: copy r of template t is the r-th request of its kind, spread over the $seconds from
# $start (November), its id prefixed by $prefix.
_GENERATED = """
    select $prefix || t.request_id || '-' || r as request_id,
           $start::timestamp + to_seconds(cast(r * 2591 % $seconds as bigint)) as requested_at,
           t.model, t.tenant, t.business_line, t.input_tokens + r % 7 as input_tokens,
           t.output_tokens + (r % 5) * (t.output_tokens > 0)::int as output_tokens, t.cache_hit, t.latency_ms,
           t.latency_tier, t.status, t.task_id, t.attempt, t.escalated_to, t.human_handoff
    from read_json($template, format = 'newline_delimited') as t, range($copies) as copies(r)
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


def write_requests(
    folder: Path,
    requests: int,
    template: Path | None = None,
    start: str = "2026-11-01",
    seconds: int = 30 * 86400,
    prefix: str = "",
) -> int:
    """Replace the demo's request log with ``requests`` generated ones over the ``seconds`` from ``start``, one JSON
    Lines file per million (named ``prefix`` + native/litellm + part), their ids prefixed by ``prefix``; from the
    requests of ``template`` (by default the demo's log, removed)."""
    demo = folder / "requests_2026-11.jsonl"
    con = duckdb_session.connect()
    source = str(template or demo)
    (templates,) = con.execute("select count(*) from read_json(?, format = 'newline_delimited')", [source]).fetchone()
    copies = -(-requests // templates)
    con.execute(
        f"create table generated as select *, row_number() over () % 4 = 3 as litellm, "
        f"(row_number() over () - 1) // {PER_FILE} as part from ({_GENERATED}) limit {int(requests)}",
        {"template": source, "copies": copies, "start": start, "seconds": seconds, "prefix": prefix},
    )
    if template is None:
        demo.unlink()
    (parts,) = con.execute("select max(part) + 1 from generated").fetchone()
    for part in range(parts):
        for name, sql in (("native", _NATIVE), ("litellm", _LITELLM)):
            target = folder / f"{prefix}{name}_{part:03d}.jsonl"
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


def forget_built(warehouse: Path) -> None:
    """Drop the inputs the request tables kept of their last build: the next build makes every month again."""
    con = duckdb_session.connect(str(warehouse))
    for table in ("staging.stg_serving__requests_built", "intermediate.int_requests_costed_built"):
        con.execute(f"drop table if exists {table}")
    con.close()


def second_night(work: Path, per_day: int, days: int, record: bool = True) -> None:
    """Night 1 loads ``days`` days of ``per_day`` requests (the last days of October, one set of files a day) into
    the demo's warehouse; night 2 adds the next day's (1 November, a month of its own, priced by the
    demo's replicas). Both time the request path as the first mode does. The request models are incremental by
    month: night 2 builds November again, not October's ``days`` days. Night 2 is also run on a copy of the warehouse
    from before it whose request tables' kept inputs were dropped, so that it builds every month (what every night
    cost before); the two request tables must then be equal, or the benchmark fails. The figures are appended to
    ``results_requests.csv`` unless ``record`` is false."""
    landing = write_demo_landing(work / "landing")
    warehouse = work / "warehouse.duckdb"
    template = work / "template.jsonl"
    shutil.copy(landing / "requests" / "requests_2026-11.jsonl", template)
    env = {**os.environ, "COST_LANDING_DIR": str(landing), "COST_WAREHOUSE": str(warehouse), "DAGSTER_HOME": str(work)}
    night = [str(BIN / "cost-pipeline"), "run", "--landing", str(landing), "--warehouse", str(warehouse)]
    subprocess.run(night, env=env, check=True, stdout=subprocess.DEVNULL)  # setup: the demo's night
    materialize = [str(BIN / "dagster"), "asset", "materialize", "-m", "cost_pipeline.definitions"]
    materialize += ["--select", REQUEST_ASSETS]
    first_day = date(2026, 11, 1) - timedelta(days=days)
    for day in (first_day + timedelta(days=n) for n in range(days)):
        write_requests(landing / "requests", per_day, template, str(day), 86400, f"day_{day}_")
    first = measured(materialize, env)
    whole = work / "whole.duckdb"  # night 2 again, every month built (as every night was before)
    shutil.copy(warehouse, whole)
    forget_built(whole)
    write_requests(landing / "requests", per_day, template, "2026-11-01", 86400, "day_2026-11-01_")
    second = measured(materialize, env)
    rebuilt = measured(materialize, {**env, "COST_WAREHOUSE": str(whole)})
    con = duckdb_session.connect(str(warehouse), read_only=True)
    months = con.execute(
        "select month_start, count(*) from intermediate.int_requests_costed group by all order by all"
    ).fetchall()
    con.execute(f"attach '{whole}' as whole (read_only)")
    for table in ("staging.stg_serving__requests", "intermediate.int_requests_costed"):
        ours, theirs = f"select * from {table}", f"select * from whole.{table}"
        (differ,) = con.execute(
            f"select count(*) from (({ours} except all {theirs}) union all ({theirs} except all {ours}))"
        ).fetchone()
        if differ:
            raise SystemExit(f"{table}: night 2 differs from night 2 with every month built in {differ} rows")
    con.close()
    print(f"{per_day:,} requests a day; night 1: {days} days ({first_day} on), night 2: one more (2026-11-01)")
    print("int_requests_costed by month:", ", ".join(f"{month}: {rows:,}" for month, rows in months))
    print("| night | requests loaded | wall s | CPU s | peak RSS MB |")
    print("|---|---|---|---|---|")
    nights = (("1", days * per_day, first), ("2", per_day, second), ("2, every month built", per_day, rebuilt))
    for name, loaded, figures in nights:
        print(f"| {name} | {loaded:,} | {figures['wall']:.1f} | {figures['cpu']:.1f} | {figures['rss_mb']:.0f} |")
    ratios = [second[k] / first[k] for k in ("wall", "cpu", "rss_mb")]
    print("| night 2 / night 1 | 1/{} of the requests | {:.2f}x | {:.2f}x | {:.2f}x |".format(days, *ratios))
    print("stg_serving__requests and int_requests_costed: night 2 equals night 2 with every month built")
    if record:
        from bench_cluster_day import commit  # not at the top: bench_cluster_day imports this module

        new = not NIGHTS_RESULTS.exists()
        with NIGHTS_RESULTS.open("a", newline="", encoding="utf-8") as results:
            writer = csv.DictWriter(results, fieldnames=NIGHTS_COLUMNS)
            if new:
                writer.writeheader()
            writer.writerow(
                {
                    "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "commit": commit(),
                    "requests_per_day": per_day,
                    "days": days,
                    **{
                        f"{night}_{k}": round(f[key], 1)
                        for night, f in (("night1", first), ("night2", second), ("whole", rebuilt))
                        for k, key in (("wall_s", "wall"), ("cpu_s", "cpu"), ("rss_mb", "rss_mb"))
                    },
                    "ratio": round(ratios[0], 3),
                }
            )
        print(f"appended to {NIGHTS_RESULTS}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1_000_000, help="requests (a day, with --days)")
    parser.add_argument(
        "--days",
        type=int,
        help="the second-night mode: night 1 loads this many days of --requests a day, night 2 one more day",
    )
    parser.add_argument("--no-record", action="store_true", help="--days: do not append to results_requests.csv")
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one, removed afterwards)")
    parser.add_argument("--baseline", nargs=3, metavar=("WAREHOUSE", "FOLDER", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        warehouse, folder, out = args.baseline
        baseline(Path(warehouse), Path(folder), Path(out))
        return
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-requests-"))
    if args.days:
        try:
            second_night(work, args.requests, args.days, not args.no_record)
        finally:
            if args.dir is None:
                shutil.rmtree(work, ignore_errors=True)
        return
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
        forget_built(warehouse)  # and builds every month of the request tables again
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
