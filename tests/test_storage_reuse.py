"""A night pays for the new day's S3 Inventory files, not for history (issue 15).

An inventory file's rows depend on its bytes and on what is beside it: the manifest listing it (its fileSchema,
fileFormat and creationTimestamp), or none (the date in its name, its header line), a manifest that rejects it, and
the contract's ``storage_default_class`` (for an inventory without StorageClass). A file loaded before is reused
(not read: its raw rows, quarantined lines and ledger row stay) only while all of them are what they were; when one
changes, the file is read again and the warehouse ends exactly as a full load of the same landing folder into a new
warehouse leaves it, row for row.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from cost_pipeline.contract import Contract, load_contract
from cost_pipeline.ingest.lib import warehouse as wh
from cost_pipeline.ingest.lib.in_database import load_in_database
from cost_pipeline.ingest.storage import INVENTORY
from tests.helpers import source_state
from tests.test_storage_aws_layout import DAYS, SCHEMA, _aws_layout, _manifest

CONFIG = "storage/inventories/ml-prod/daily-all-objects"
DAY_1, DAY_2 = DAYS
DATA_1 = f"{CONFIG}/data/{DAYS[DAY_1][1]}"
DATA_2 = f"{CONFIG}/data/{DAYS[DAY_2][1]}"
NO_CLASS = "storage/ml-archive_2026-11-30.csv"  # a header line without StorageClass: the contract's default class
LISTED = "storage/named/ml-prod_2026-11-28.csv"  # a header line and a date in its name, and a manifest listing it
PARQUET = "storage/archive_2026-11-29.parquet"  # Parquet without storage_class, dated by its name, one bad size
EVERY_FILE = sorted([DATA_1, DATA_2, NO_CLASS, LISTED, PARQUET])
NAMED_SCHEMA = "Bucket, Key, Size, LastModifiedDate, StorageClass"
NAMED_ROWS = "ml-prod,k1,5,2026-11-02T00:00:00Z,STANDARD\nml-prod,k2,-1,2026-11-02T00:00:00Z,STANDARD\n"


class _Night:
    """Loads the inventory into one warehouse, as a night does, and records which files were read."""

    def __init__(self, landing: Path, warehouse: Path) -> None:
        self.landing, self.warehouse, self.read = landing, warehouse, []

    def load(self, contract: Contract | None = None) -> wh.IngestReport:
        loader = INVENTORY.loader.bound(INVENTORY.loader, contract or load_contract(), self.landing)

        def counted(con, path, blank_lines):
            read = path.relative_to(self.landing).as_posix()
            if read not in self.read:  # a Parquet file is staged twice: checked, then its good rows read again
                self.read.append(read)
            return loader.stage(con, path, blank_lines)

        con = wh.connect(self.warehouse, self.landing)
        try:
            self.read = []
            files = INVENTORY.files(self.landing)
            return load_in_database(
                con, self.landing, files, INVENTORY.name, dataclasses.replace(loader, stage=counted)
            )
        finally:
            con.close()

    def state(self) -> dict[str, list[tuple]]:
        return source_state(self.warehouse, "storage_inventory")


def _report(report: wh.IngestReport) -> tuple:
    return (
        report.files,
        report.rows_in,
        report.rows_staged,
        report.rows_quarantined,
        dict(report.by_rule),
        sorted(report.examples),
        report.duplicates,
        sorted(report.flags),
    )


def _landing(tmp_path: Path) -> Path:
    """Two days in AWS's layout (one bad size), an inventory without StorageClass dated by its name (CSV and
    Parquet), and one with a header line and a date in its name that a manifest beside it lists (header-less: its
    header is a bad row)."""
    landing = tmp_path / "landing"
    storage = landing / "storage"
    _aws_layout(storage, "inventories")
    (storage / "ml-archive_2026-11-30.csv").write_text(
        "Bucket,Key,Size,LastModifiedDate\nml-archive,old/x.bin,10,2026-01-01T00:00:00Z\n", encoding="utf-8"
    )
    named = storage / "named"
    named.mkdir()
    (named / "ml-prod_2026-11-28.csv").write_text(f"{NAMED_SCHEMA.replace(' ', '')}\n{NAMED_ROWS}", encoding="utf-8")
    (named / "manifest.json").write_text(
        _manifest("1796014800000", ["inventories/named/ml-prod_2026-11-28.csv"], NAMED_SCHEMA), encoding="utf-8"
    )
    con = duckdb.connect()
    con.execute(
        "copy (select 'ml-archive' as bucket, 'old/' || n as key, case when n = 2 then -1 else 10 end as size, "
        "timestamp '2026-01-01' as last_modified_date from range(3) as t(n)) to ? (format parquet)",
        [str(landing / PARQUET)],
    )
    con.close()
    return landing


def _full_load(landing: Path, tmp_path: Path, contract: Contract | None = None) -> tuple[wh.IngestReport, dict]:
    fresh = _Night(landing, tmp_path / "fresh" / "w.duckdb")
    return fresh.load(contract), fresh.state()


def test_a_second_night_reads_no_unchanged_inventory_and_keeps_what_the_first_loaded(tmp_path):
    landing = _landing(tmp_path)
    night = _Night(landing, tmp_path / "w.duckdb")
    first = night.load()
    assert sorted(night.read) == EVERY_FILE
    first_state = night.state()
    assert first.rows_quarantined == 4 and sorted(flag.split(":")[0] for flag in first.flags) == [PARQUET, NO_CLASS]

    second = night.load()
    assert night.read == []
    assert night.state() == first_state
    assert _report(second) == _report(first)  # the reused files counted, and the file without a class flagged
    assert second.conserved


def _rewrite_manifest(landing: Path, day: str, **changes: str) -> None:
    created_ms, name, _ = DAYS[day]
    key = f"inventories/ml-prod/daily-all-objects/data/{name}"
    arguments = {"created_ms": created_ms, "keys": [key], "schema": SCHEMA, **changes}
    manifest = landing / CONFIG / day / "manifest.json"
    manifest.write_text(_manifest(**arguments), encoding="utf-8")


def _default_class(class_name: str) -> Contract:
    document = copy.deepcopy(load_contract().document)
    document["storage_default_class"] = class_name
    return Contract("v1", document)


def _unlink(relative: str) -> Callable[[Path], None]:
    return lambda landing: (landing / relative).unlink()


def _another_format(landing: Path) -> None:
    manifest = landing / CONFIG / DAY_1 / "manifest.json"
    document = json.loads(manifest.read_text(encoding="utf-8"))
    document["fileFormat"] = "Parquet"
    manifest.write_text(json.dumps(document), encoding="utf-8")


def _not_json(landing: Path) -> None:
    (landing / CONFIG / DAY_2 / "manifest.json").write_text("{not json", encoding="utf-8")


def _other_bytes(landing: Path) -> None:
    (landing / LISTED).write_text(f"{NAMED_ROWS}ml-prod,k3,7,2026-11-02T00:00:00Z,STANDARD\n", encoding="utf-8")


# name -> (what changes in the landing folder, the contract's default class the next night (None: the same), the
# file read again)
CHANGES: dict[str, tuple[Callable[[Path], object], str | None, str]] = {
    "another creationTimestamp": (
        lambda landing: _rewrite_manifest(landing, DAY_1, created_ms="1795827600000"),
        None,
        DATA_1,
    ),
    # the StorageClass column named otherwise: a STANDARD_IA object takes the default class, and the file is flagged
    "another fileSchema": (
        lambda landing: _rewrite_manifest(landing, DAY_1, schema=SCHEMA.replace("StorageClass", "Tier")),
        None,
        DATA_1,
    ),
    "another fileFormat": (_another_format, None, DATA_1),
    "the manifest is gone: rejected": (_unlink(f"{CONFIG}/{DAY_1}/manifest.json"), None, DATA_1),
    "the manifest is gone: dated by its name": (_unlink("storage/named/manifest.json"), None, LISTED),
    "the manifest is not readable": (_not_json, None, DATA_2),
    "another default class": (lambda landing: None, "GLACIER", NO_CLASS),
    "other bytes": (_other_bytes, None, LISTED),
}
# The changes after which the file is refused whole: such a file is read again every night (reuse.py).
REFUSED = {"another fileFormat", "the manifest is gone: rejected", "the manifest is not readable"}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_file_whose_manifest_contract_or_bytes_changed_is_read_again_as_a_full_load_reads_it(tmp_path, change):
    landing = _landing(tmp_path)
    night = _Night(landing, tmp_path / "w.duckdb")
    night.load()
    before = night.state()
    alter, default_class, affected = CHANGES[change]
    alter(landing)
    contract = None if default_class is None else _default_class(default_class)

    report = night.load(contract)
    assert affected in night.read
    # the contract's default class is beside every file: another reads each again
    assert sorted(night.read) == (EVERY_FILE if contract is not None else [affected])
    full_report, full_state = _full_load(landing, tmp_path, contract)
    after = night.state()
    assert after == full_state
    assert after != before  # what changed beside the file changed its rows, lines or ledger row
    assert _report(report) == _report(full_report)
    refused = [row[1] for row in after["quarantine"] if row[3] == 0]
    assert refused == ([affected] if change in REFUSED else [])
    night.load(contract)
    assert night.read == refused  # the night after reuses the file, unless it is refused whole
