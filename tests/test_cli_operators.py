"""What the operator gives and is told at the command line: ``--config`` run config, files no source reads,
files refused whole, quarantine messages in words, and the per-source summary that ends the run.

No real site's header-less sacct dump is public: the dump here is built from sacct's documented field list
(``sacct --noheader --parsable2 --delimiter=☃ --format=...``, field names as in the sacct man page,
https://slurm.schedmd.com/sacct.html), a few hundred rows of allocations with their ``batch`` and ``extern`` steps.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import dagster as dg
import yaml

from cost_pipeline.cli import main
from cost_pipeline.contract import load_contract
from cost_pipeline.defs.ingest import ignored_files
from cost_pipeline.defs.resources import LandingZone, Warehouse
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_named, unread_files
from tests.helpers import query

SNOWMAN = "☃"
# The --format list a site might use: documented sacct field names, in the site's order, with one the pipeline
# does not read (AllocCPUS).
SITE_FIELDS = [
    "JobID",
    "JobIDRaw",
    "JobName",
    "Partition",
    "Account",
    "User",
    "AllocCPUS",
    "State",
    "ExitCode",
    "Submit",
    "Start",
    "End",
    "Elapsed",
    "Timelimit",
    "NNodes",
    "NodeList",
    "ReqTRES",
    "AllocTRES",
    "Comment",
]
ALLOCATIONS = 100  # each with a .batch and an .extern step: 300 lines


def _dump_line(values: dict[str, str]) -> str:
    return SNOWMAN.join(values.get(field, "") for field in SITE_FIELDS)


def site_dump() -> str:
    """A header-less, snowman-delimited ``sacct --parsable2`` dump of allocations and their steps."""
    lines = []
    start = datetime(2026, 11, 2)
    for n in range(ALLOCATIONS):
        job = str(700000 + n)
        begin = start + timedelta(hours=n)
        end = begin + timedelta(minutes=50)
        common = {
            "JobIDRaw": job,
            "Partition": "gpu",
            "Account": "ml",
            "User": f"u{n % 7}",
            "AllocCPUS": "64",
            "State": "COMPLETED",
            "ExitCode": "0:0",
            "Submit": (begin - timedelta(minutes=5)).isoformat(),
            "Start": begin.isoformat(),
            "End": end.isoformat(),
            "Elapsed": "00:50:00",
            "NNodes": "1",
            "NodeList": f"node-{n % 4:02d}",
        }
        lines.append(
            _dump_line(
                {
                    **common,
                    "JobID": job,
                    "JobName": f"train-{n}",
                    "Timelimit": "01:00:00",
                    "ReqTRES": "billing=64,cpu=64,gres/gpu=8,mem=512G,node=1",
                    "AllocTRES": "billing=64,cpu=64,gres/gpu=8,mem=512G,node=1",
                    "Comment": "batch=B-7;phase=training",
                }
            )
        )
        for step in ("batch", "extern"):
            lines.append(
                _dump_line(
                    {
                        **common,
                        "JobID": f"{job}.{step}",
                        "JobIDRaw": f"{job}.{step}",
                        "JobName": step,
                        "AllocTRES": "cpu=64,gres/gpu=8,mem=512G,node=1",
                    }
                )
            )
    return "\n".join(lines) + "\n"


def _write_config(path: Path, config: dict) -> Path:
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def _sacct_config(fields: list[str]) -> dict:
    return {"ops": {"raw__scheduler_jobs": {"config": {"sacct_delimiter": SNOWMAN, "sacct_fields": fields}}}}


def test_a_wrong_option_name_is_one_line_naming_the_op_before_anything_runs(tmp_path, capsys):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    landing.mkdir()
    config = _write_config(tmp_path / "run.yaml", {"ops": {"raw__scheduler_jobs": {"config": {"sacct_delimitr": ";"}}}})
    assert main(["run", "--landing", str(landing), "--warehouse", str(warehouse), "--config", str(config)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert "ops.raw__scheduler_jobs.config" in error and "sacct_delimitr" in error and "sacct_delimiter" in error
    assert not warehouse.exists()


def test_a_wrong_option_value_is_one_line_too(tmp_path, capsys):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    landing.mkdir()
    for config, expected in (
        (_sacct_config(["JobID", "State"]), "sacct_fields lacks Start"),
        ({"ops": {"raw__scheduler_jobs": {"config": {"sacct_fields": "JobID"}}}}, "sacct_fields"),
        ({"ops": {"raw__no_such_source": {"config": {}}}}, "raw__no_such_source"),
    ):
        path = _write_config(tmp_path / "run.yaml", config)
        assert main(["run", "--landing", str(landing), "--warehouse", str(warehouse), "--config", str(path)]) == 2
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1 and expected in error, error
        assert "Expected:" not in error
    assert not warehouse.exists()


def test_a_header_less_snowman_dump_loads_through_cost_pipeline_run_config(tmp_path, capsys):
    # A warehouse named as the demo's: the night's dbt starts from the session's prepared parse (dbt_setup).
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    (landing / "scheduler").mkdir(parents=True)
    (landing / "scheduler" / "sacct_2026-11.txt").write_text(site_dump(), encoding="utf-8")
    (landing / "scheduler" / "NOTES.md").write_text("how we export\n", encoding="utf-8")  # no source reads it
    (landing / "steps").mkdir()
    (landing / "steps" / "steps.jsonl").write_text("not json\n[1]\n", encoding="utf-8")  # every row refused
    config = _write_config(tmp_path / "run.yaml", _sacct_config(SITE_FIELDS))

    code = main(["run", "--landing", str(landing), "--warehouse", str(warehouse), "--config", str(config)])

    out, err = capsys.readouterr()
    assert query(
        warehouse,
        "select count(*), count(distinct allocation_id), sum(gpus_allocated) "
        "from raw.scheduler_jobs where record_type = 'allocation'",
    ) == [(100, 100, 800)]
    assert query(
        warehouse,
        "select rows_in, rows_staged, rows_quarantined from raw.ingested_files where source = 'scheduler_jobs'",
    ) == [(300, 300, 0)]
    assert query(warehouse, "select source_file, folder from raw.ignored_files") == [
        ("scheduler/NOTES.md", "scheduler")
    ]
    summary = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("  ")}
    assert summary["scheduler_jobs"] == ["1", "300", "300", "0"]
    assert summary["training_steps"] == ["1", "2", "0", "2"]
    assert "scheduler/NOTES.md" in out
    # Every row of one source was quarantined: the run ends non-zero, naming it on the last line.
    assert code == 4
    assert "training_steps" in err.strip().splitlines()[-1]


def test_a_file_refused_whole_counts_the_records_it_held(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "scheduler").mkdir(parents=True)
    (landing / "scheduler" / "dump.txt").write_text(site_dump(), encoding="utf-8")  # header-less, no fields
    con = connect(warehouse, readable_dir=landing)
    try:
        report = load_named(con, landing, "scheduler_jobs", load_contract())
    finally:
        con.close()
    assert (report.rows_in, report.rows_staged, report.rows_quarantined) == (300, 0, 300) and report.conserved
    assert query(warehouse, "select rows_in, rows_staged, rows_quarantined, refused_whole from raw.ingested_files") == [
        (300, 0, 300, True)
    ]
    ((line, rule, message),) = query(warehouse, "select line, rule, message from raw.quarantine")
    assert (line, rule) == (0, "sacct_header") and "300 records were not loaded" in message


def test_files_no_source_reads_are_recorded_and_warned(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    for name in ("scheduler/jobs.sacct", "scheduler/export.xlsx", "billing/focus.csv", "unknown/a.csv", "top.txt"):
        (landing / name).parent.mkdir(parents=True, exist_ok=True)
        (landing / name).write_text("x\n", encoding="utf-8")
    assert [p.relative_to(landing).as_posix() for p in unread_files(landing)] == [
        "scheduler/export.xlsx",
        "top.txt",
        "unknown/a.csv",
    ]
    result = dg.materialize(
        [ignored_files],
        instance=dg.DagsterInstance.ephemeral(),
        resources={"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))},
    )
    assert result.success
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "no_ignored_files" and not check.passed
    assert check.severity == dg.AssetCheckSeverity.WARN
    assert query(warehouse, "select source_file, folder, size_bytes from raw.ignored_files order by 1") == [
        ("scheduler/export.xlsx", "scheduler", 2),
        ("top.txt", "", 2),
        ("unknown/a.csv", "unknown", 2),
    ]


def test_quarantine_messages_say_what_was_expected_with_an_example_and_no_pattern(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "ledger").mkdir(parents=True)
    (landing / "ledger" / "facility.csv").write_text(
        "month,item,amount,currency\n"
        "2026-11,rent,12.345,USD\n"  # three decimals
        "Nov 2026,rent,10.00,USD\n"  # not a month
        "2026-11,rent,10.00,EUR\n",  # not the reporting currency
        encoding="utf-8",
    )
    con = connect(warehouse, readable_dir=landing)
    try:
        load_named(con, landing, "ledger_facility", load_contract())
    finally:
        con.close()
    messages = dict(query(warehouse, "select line, message from raw.quarantine order by line"))
    assert messages[2] == "column amount should hold an amount such as 12.34, at most 2 decimals"
    assert messages[3] == "column month should hold a month such as 2026-11 (or 2026-11-01)"
    assert messages[4] == "column currency should hold the contract's reporting currency"
    for message in messages.values():
        assert not any(mark in message for mark in ("^", "\\d", "$", "str_matches", "Nov 2026", "12.345", "EUR"))


SACCT_JSON = Path(__file__).parent / "data" / "slurm" / "sacct_json_v0.0.43.json"


def test_sacct_json_loads_into_the_same_raw_columns_as_the_parsable_output(tmp_path):
    """``sacct --json`` (data_parser v0.0.43; built from the documented schema, see tests/data/slurm/README.md)."""
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "scheduler").mkdir(parents=True)
    (landing / "scheduler" / "sacct_2026-11-03.json").write_bytes(SACCT_JSON.read_bytes())
    con = connect(warehouse, readable_dir=landing)
    try:
        report = load_named(con, landing, "scheduler_jobs", load_contract())
    finally:
        con.close()
    assert (report.rows_in, report.rows_staged, report.rows_quarantined) == (5, 4, 1)
    rows = query(
        warehouse,
        """
        select job_id, job_id_raw, allocation_id, record_type, state, start_at, end_at, time_limit_seconds,
               gpus_requested, gpus_allocated, node_count, node_list, batch_id, phase, restarts, source_line
        from raw.scheduler_jobs order by source_line""",
    )
    # The job's cluster, part of its job key (a JobID is reused across clusters), on the job and its steps.
    assert query(warehouse, "select distinct cluster from raw.scheduler_jobs") == [("gpu-cluster",)]
    start, end = datetime(2026, 11, 3, 0, 5), datetime(2026, 11, 3, 2, 5)
    assert rows == [
        (
            "4242",
            "4242",
            "4242",
            "allocation",
            "COMPLETED",
            start,
            end,
            240 * 60,
            16,
            16,
            2,
            "node-[01-02]",
            "B-7",
            "training",
            0,
            1,
        ),
        (
            "4242.batch",
            "4242.batch",
            "4242",
            "step",
            "COMPLETED",
            start,
            end,
            None,
            0,
            8,
            1,
            "node-01",
            "B-7",
            "training",
            0,
            2,
        ),
        (
            "4242.0",
            "4242.0",
            "4242",
            "step",
            "COMPLETED",
            start,
            end,
            None,
            0,
            16,
            2,
            "node-[01-02]",
            "B-7",
            "training",
            0,
            3,
        ),
        (
            "4300_3",
            "4303",
            "4300_3",
            "allocation",
            "CANCELLED",
            datetime(2026, 11, 3, 1, 5),
            datetime(2026, 11, 3, 1, 15),
            None,
            1,
            1,
            1,
            "node-03",
            "B-8",
            "validation",
            1,
            4,
        ),
    ]
    assert query(warehouse, "select line, rule from raw.quarantine") == [(5, "end_not_before_start")]


def test_a_file_that_is_not_sacct_json_is_refused_whole(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "scheduler").mkdir(parents=True)
    (landing / "scheduler" / "other.json").write_text('{"data": [1, 2]}\n', encoding="utf-8")
    con = connect(warehouse, readable_dir=landing)
    try:
        load_named(con, landing, "scheduler_jobs", load_contract())
    finally:
        con.close()
    assert query(warehouse, "select line, rule from raw.quarantine") == [(0, "sacct_json")]
    assert query(warehouse, "select rows_in, rows_quarantined, refused_whole from raw.ingested_files") == [(1, 1, True)]
