"""Every file of a source is validated in one pass (``validate_files``), with the very outcome one pass per file
gives: the same rejections at the same lines, the same valid rows; a key is unique within its own file only.
10,000 one-record files paid pandera's fixed cost 10,000 times (bench/bench_many_files.py)."""

from __future__ import annotations

import copy

import pandas as pd

from cost_pipeline.contract import load_contract
from cost_pipeline.ingest.lib.records import parse_file
from cost_pipeline.ingest.lib.validate import validate_files, validate_rows
from cost_pipeline.ingest.registry import sources

HEADER = (
    "batch_id,project,goal,team,data_version,model_version,code_version,config_version,budget_cost,"
    "budget_gpu_hours,max_trial_rounds,stop_condition,variance_boundary_pct,contract_version\n"
)


def _line(batch: str, budget: str = "100.00", rounds: str = "2", version: str = "v1") -> str:
    return f"{batch},p,g,post-training,d,m,c,cfg,{budget},10.00,{rounds},stop,5.00,{version}\n"


FILES = {
    "a.csv": HEADER + _line("B-1") + _line("B-2", budget="-5.00") + _line("B-1"),  # a negative budget; B-1 twice
    "b.csv": HEADER + _line("B-1") + _line("B-3", rounds="1.5"),  # B-1 again, but in another file; 1.5 rounds
    "c.csv": HEADER,  # no rows
    "d.csv": HEADER + _line("B-4", version="v9") + _line("B-5"),  # an unknown contract version
}


def _parsed(tmp_path):
    source = sources()["batch_registry"]
    schema = source.loader.schema(load_contract())
    parser = source.loader.parser(schema, None)
    parsed = []
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        parsed.append(parse_file(tmp_path / name, parser))
    return schema, parsed


def test_one_pass_over_every_file_gives_what_a_pass_per_file_gives(tmp_path):
    schema, parsed = _parsed(tmp_path)
    one_by_one = copy.deepcopy(parsed)
    expected = [validate_rows(p, schema) for p in one_by_one]
    batched = validate_files(parsed, schema)
    for alone, together, frame_alone, frame_together in zip(one_by_one, parsed, expected, batched, strict=True):
        assert [(r.line, r.rule, r.message) for r in together.rejections] == [
            (r.line, r.rule, r.message) for r in alone.rejections
        ]
        pd.testing.assert_frame_equal(frame_together, frame_alone, check_dtype=False, check_index_type=False)
    rules = {(p.path.name, r.line, r.rule) for p in parsed for r in p.rejections}
    assert ("a.csv", 4, "batch_id.unique") in rules and not any(f == "b.csv" and "unique" in r for f, _, r in rules)
    assert {f for f, _, _ in rules} == {"a.csv", "b.csv", "d.csv"}
    assert list(batched[1]["batch_id"]) == ["B-1"] and list(batched[1]["source_line"]) == [2]
