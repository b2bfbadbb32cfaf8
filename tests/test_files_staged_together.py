"""Small device-sample CSV files staged together (issue 10: a landing folder of many one-record files).

Consecutive small CSV files with the same header line are read by one ``read_csv`` and checked by one insert
(``in_database._groups``); a group that cannot be read together is read again file by file. Either way a file must
get the same raw rows at the same lines, the same quarantine and the same ledger counts as when every file is read
alone, which is what these tests compare, on a folder that holds every kind of file a group can meet.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.contract import load_contract
from cost_pipeline.ingest import telemetry
from cost_pipeline.ingest.lib import in_database
from cost_pipeline.ingest.lib.warehouse import connect
from cost_pipeline.ingest.registry import load_named
from tests.test_litellm_requests import LITELLM_ROWS
from tests.test_telemetry_formats import DATA, _scrape, _scrape_line

HEADER = (
    "timestamp,hostname,gpu,job_id,DCGM_FI_PROF_GR_ENGINE_ACTIVE,DCGM_FI_PROF_SM_ACTIVE,"
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE,DCGM_FI_PROF_NVLINK_TX_BYTES,DCGM_FI_PROF_NVLINK_RX_BYTES,DCGM_FI_DEV_POWER_USAGE"
)
REORDERED = (
    "hostname,timestamp,gpu,job_id,DCGM_FI_PROF_GR_ENGINE_ACTIVE,DCGM_FI_PROF_SM_ACTIVE,"
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE,DCGM_FI_PROF_NVLINK_TX_BYTES,DCGM_FI_PROF_NVLINK_RX_BYTES,DCGM_FI_DEV_POWER_USAGE"
)


def _row(second: int, power: str = "300.5", host: str = "node-01") -> str:
    return f"2026-11-03 10:{second // 60:02d}:{second % 60:02d},{host},{second % 8},1001,0.9,0.8,0.4,1e8,2e8,{power}"


def _landing(tmp_path: Path) -> Path:
    """A telemetry folder whose files, in name order, mix every case a group of files can hold."""
    folder = tmp_path / "landing" / "telemetry"
    folder.mkdir(parents=True)
    texts: dict[str, bytes | str] = {
        "s_001.csv": f"{HEADER}\n{_row(1)}\n{_row(2)}\n",
        # a broken line (one column too many), an empty line, then a good row
        "s_002.csv": f"{HEADER}\n{_row(3)}\n{_row(4)},extra\n\n{_row(5)}\n",
        "s_003.csv": f"{HEADER}\r\n{_row(6)}\r\n{_row(7)}\r\n",  # CRLF
        "s_004.csv": f"{HEADER}\n{_row(8, power='-5')}\n{_row(9)}\n",  # a value that breaks the contract
        "s_005.csv": f"{HEADER}\n",  # no rows
        "s_006.csv": f"{HEADER}\n{_row(1)}\n{_row(2)}\n",  # s_001's bytes: a duplicate, not read
        "s_007.csv": f'{HEADER}\n{_row(10)}\n"{_row(11)}\n',  # an unterminated quote: DuckDB cannot read it
        "s_008.csv": f"{HEADER}\n{_row(12)}\n".encode() + b"2026-11-03 10:00:13,node-\xff,1,1001,0.9,0.8,0.4,1,2,3\n",
        "s_009.csv": f"{HEADER}\n{_row(14, host=chr(34) + 'node' + chr(10) + '01' + chr(34))}\n{_row(15)}\n",
        "s_010.csv": f"{REORDERED}\nnode-02,2026-11-03 10:00:16,0,1001,0.9,0.8,0.4,1e8,2e8,310\n",  # its own group
        "s_011.csv": "timestamp,hostname\n2026-11-03 10:00:17,node-01\n",  # lacks required columns: whole
        "s_013.csv": f"\n\n{HEADER}\n{_row(18)}\n",  # empty lines before its header
        **{f"s_{n:03d}.csv": f"{HEADER}\n{_row(n)}\n" for n in range(20, 40)},
        "s_040.csv": f"{HEADER}\n{_row(40)}\n\n\n{_row(41)}\n{_row(42)},x,y\n{_row(43)}\n",
        "s_025[*].csv": f"{HEADER}\n{_row(44)}\n",  # a name DuckDB's readers would expand: read alone
    }
    for name, text in texts.items():
        path = folder / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_bytes(text.encode())
    # a Parquet file among them, read alone
    con = duckdb.connect()
    con.execute(
        f"copy (select * from read_csv('{folder / 's_001.csv'}', all_varchar = true)) to '{folder / 's_012.parquet'}'"
    )
    con.close()
    return tmp_path / "landing"


def _load(
    landing: Path, warehouse: Path, source: str = "device_samples"
) -> tuple[list[tuple], list[tuple], list[tuple]]:
    con = connect(warehouse, readable_dir=landing)
    try:
        load_named(con, landing, source, load_contract())
        raw = con.execute(f"select * from raw.{source} order by source_file, source_line").fetchall()
        quarantine = con.execute("select source_file, line, rule, message from raw.quarantine order by all").fetchall()
        ledger = con.execute(
            "select source_file, file_sha256, rows_in, rows_staged, rows_quarantined from raw.ingested_files "
            "order by all"
        ).fetchall()
    finally:
        con.close()
    return raw, quarantine, ledger


def test_files_read_together_load_as_files_read_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    landing = _landing(tmp_path)
    groups: list[int] = []
    staged_together = telemetry.stage_csv_files

    def counting(con, files, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        groups.append(len(files))
        return staged_together(con, files, *args, **kwargs)

    monkeypatch.setattr(telemetry, "stage_csv_files", counting)
    together = _load(landing, tmp_path / "together.duckdb")
    assert max(groups) >= 10, groups  # the one-record files were read together

    monkeypatch.setattr(in_database, "GROUP_FILES", 1)
    groups.clear()
    alone = _load(landing, tmp_path / "alone.duckdb")
    assert groups == []

    assert together == alone
    raw, quarantine, ledger = together
    # The figures themselves, so that both ways being wrong alike fails too: each line where the file has it.
    lines = {(r[-3].removeprefix("telemetry/"), r[-2]) for r in raw}
    assert {line for f, line in lines if f == "s_002.csv"} == {2, 5}
    assert {line for f, line in lines if f == "s_040.csv"} == {2, 5, 7}
    assert {line for f, line in lines if f == "s_008.csv"} == {2}
    assert len(raw) == 2 + 2 + 2 + 1 + 1 + 2 + 1 + 2 + 20 + 1 + 3
    assert {(f.removeprefix("telemetry/"), line, rule) for f, line, rule, _ in quarantine} == {
        ("s_002.csv", 3, "csv_structure"),
        ("s_004.csv", 2, "DCGM_FI_DEV_POWER_USAGE.non_negative"),
        ("s_007.csv", 0, "file_format"),
        ("s_008.csv", 3, "csv_structure"),
        ("s_011.csv", 0, "file_format"),
        ("s_013.csv", 0, "file_format"),  # its first line is empty: no header
        ("s_040.csv", 6, "csv_structure"),
    }
    for source_file, _sha, rows_in, staged, quarantined in ledger:
        assert rows_in == staged + quarantined, source_file


def test_a_group_that_cannot_be_read_together_is_read_file_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """s_007 cannot be read by DuckDB; the group it falls in fails and every file of it is read alone."""
    landing = _landing(tmp_path)
    failed: list[int] = []
    read_together = in_database._read_together

    def watching(con, source, group, checked):  # noqa: ANN001, ANN202
        result = read_together(con, source, group, checked)
        if result is None:
            failed.append(len(group))
        return result

    monkeypatch.setattr(in_database, "_read_together", watching)
    raw, quarantine, _ = _load(landing, tmp_path / "w.duckdb")
    assert failed, "no group failed: the fallback was not exercised"
    assert ("telemetry/s_007.csv", 0, "file_format") in {(f, line, rule) for f, line, rule, _ in quarantine}
    assert {"telemetry/s_001.csv", "telemetry/s_009.csv"} <= {r[-3] for r in raw}


def _compare_together_and_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, landing: Path, source: str
) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """Load ``source`` with its files read together, then each alone; both must agree. Returns the first."""
    sizes: list[int] = []
    read_together = in_database._read_together

    def watching(con, loader, group, checked):  # noqa: ANN001, ANN202
        result = read_together(con, loader, group, checked)
        sizes.append(len(group) if result is not None else 0)
        return result

    monkeypatch.setattr(in_database, "_read_together", watching)
    together = _load(landing, tmp_path / "together.duckdb", source)
    assert max(sizes, default=0) >= 5, sizes  # files were read together
    monkeypatch.setattr(in_database, "GROUP_FILES", 1)
    sizes.clear()
    alone = _load(landing, tmp_path / "alone.duckdb", source)
    assert sizes == []
    assert together == alone
    return together


def test_scrapes_read_together_load_as_scrapes_read_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """dcgm-exporter scrapes: NVIDIA's real ones unedited, built ones with the scrape time in the line or the name
    only, two idle scrapes with the same bytes at two times, malformed lines, a metric repeated."""
    folder = tmp_path / "landing" / "telemetry"
    folder.mkdir(parents=True)
    for name in ("readme_standalone_scrape.prom", "readme_kubernetes_scrape.prom", "render_metrics_test_gpu.prom"):
        shutil.copyfile(DATA / "dcgm" / name, folder / f"{name.removesuffix('.prom')}_2026-11-30T10-00-00Z.prom")
    gpus = {0: ',hpc_job="1234"', 1: ',container="main",namespace="ml",pod="b10-eval-cloud-x7k2p"', 2: ""}
    for minute in range(6):
        (folder / f"node-01_2026-11-30T10-{minute:02d}-05Z.prom").write_text(_scrape(gpus))
    idle = _scrape({0: ""})
    (folder / "node-02_2026-11-30T10-00-05Z.prom").write_text(idle)
    (folder / "node-02_2026-11-30T10-01-05Z.prom").write_text(idle)  # same bytes, another scrape time
    stamped = _scrape({0: ',hpc_job="7"'}, 1796032800000).splitlines()
    stamped[2] = stamped[2].replace("} 0.93", "} zero")
    stamped.append("DCGM_FI_PROF_SM_ACTIVE{gpu=0} 0.5")
    stamped.append(_scrape_line("DCGM_FI_PROF_SM_ACTIVE", 3, 0.5, ""))  # no time in the line or the name
    (folder / "node-03.prom").write_text("\n".join(stamped) + "\n")
    (folder / "node-04_2026-11-30T10-00-05Z.prom").write_text(_scrape({0: ""}) + _scrape({0: ""}))  # repeated
    # One sample delivered again in another file (other bytes): each file has its own row.
    again = _scrape({5: ',hpc_job="9"'}, 1796032800000)
    (folder / "node-05.prom").write_text(again)
    (folder / "node-05_again.prom").write_text("# delivered again\n" + again)
    raw, quarantine, ledger = _compare_together_and_alone(
        tmp_path, monkeypatch, tmp_path / "landing", "device_samples_dcgm"
    )
    assert len(raw) == 6 * 3 + 2 + 1 + 2
    assert {(f.removeprefix("telemetry/"), line, rule) for f, line, rule, _ in quarantine} >= {
        ("node-03.prom", 3, "exposition.value"),
        ("node-03.prom", 19, "exposition.line"),
        ("node-03.prom", 20, "exposition.timestamp"),
        ("readme_kubernetes_scrape_2026-11-30T10-00-00Z.prom", 7, "exposition.line"),
    }
    assert any(
        rule == "exposition.repeated" and f.endswith("node-04_2026-11-30T10-00-05Z.prom")
        for f, _, rule, _ in quarantine
    )
    assert {str(r[0]) for r in raw if r[-3].startswith("telemetry/node-02")} == {
        "2026-11-30 10:00:05",
        "2026-11-30 10:01:05",
    }
    for source_file, _sha, rows_in, staged, quarantined in ledger:
        assert rows_in == staged + quarantined, source_file


def _request(number: int, request_id: str | None = None, **changes: object) -> str:
    record = {
        "request_id": request_id or f"r-{number}",
        "requested_at": f"2026-11-03T10:{number // 60 % 60:02d}:{number % 60:02d}",
        "model": "llama-3-70b",
        "tenant": "support",
        "business_line": "support",
        "input_tokens": 1200,
        "output_tokens": 130,
        "cache_hit": number % 2 == 0,
        "latency_ms": 920,
        "latency_tier": "standard",
        "status": "completed",
        "task_id": f"ticket-{number}",
        "attempt": 1,
        "escalated_to": None,
        "human_handoff": False,
        **changes,
    }
    return json.dumps(record)


def test_request_logs_read_together_load_as_logs_read_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """JSON Lines request logs: native and LiteLLM lines, a request repeated within a file (quarantined) and
    across files (not: the rule is within a file), a line only Python's parser reads (its group is read file by
    file), CRLF and a byte-order mark, a file that is not UTF-8, a negative token count."""
    folder = tmp_path / "landing" / "requests"
    folder.mkdir(parents=True)
    files: dict[str, bytes] = {f"r_{n:03d}.jsonl": (_request(n) + "\n").encode() for n in range(10)}
    # r-3 again at its start, in another case (the same request: quarantined), and at another time (another request)
    again = _request(4, "R-3", requested_at="2026-11-03T10:00:03")
    files["r_003.jsonl"] = (_request(3) + "\n" + again + "\n" + _request(5, "r-3") + "\n").encode()
    files["r_004.jsonl"] = (_request(40) + "\n" + _request(41, "r-0") + "\n").encode()  # r-0 in another file
    files["r_005.jsonl"] = ("\ufeff" + _request(5) + "\r\n" + _request(50) + "\r\n").encode()
    files["r_006.jsonl"] = (_request(6, output_tokens=-1) + "\n").encode()
    files["r_007.jsonl"] = b'{"request_id": "r-\xff"}\n'
    files["r_008.jsonl"] = (json.dumps(LITELLM_ROWS[0]) + "\n" + json.dumps(LITELLM_ROWS[1]) + "\n").encode()
    files.update({f"r_{n:03d}.jsonl": (_request(n) + "\n").encode() for n in range(20, 30)})
    files["r_025.jsonl"] = (_request(25)[:-1] + ', "latency_ms": NaN}\n').encode()  # only Python decides
    for name, data in files.items():
        (folder / name).write_bytes(data)
    raw, quarantine, ledger = _compare_together_and_alone(
        tmp_path, monkeypatch, tmp_path / "landing", "serving_requests"
    )
    rules = {(f.removeprefix("requests/"), line, rule) for f, line, rule, _ in quarantine}
    assert ("r_003.jsonl", 2, "request_id+requested_at.unique") in rules
    assert not any(f == "r_003.jsonl" and line == 3 for f, line, _ in rules)
    assert not any(f == "r_004.jsonl" for f, _, _ in rules)
    assert any(f == "r_006.jsonl" for f, _, _ in rules)
    assert any(f == "r_007.jsonl" for f, _, _ in rules)
    assert any(f == "r_025.jsonl" for f, _, _ in rules)
    assert {r[0] for r in raw} >= {"r-0", "r-50", "chatcmpl-9f1c", "chatcmpl-9f1d", "r-29"}
    for source_file, _sha, rows_in, staged, quarantined in ledger:
        assert rows_in == staged + quarantined, source_file
