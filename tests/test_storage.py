"""Storage inventories (I6) and storage governance (R19).

S3 Inventory files as AWS writes them (manifest + header-less CSV, gzip, header CSV, Parquet, bad files and bad
rows quarantined with a rule), loaded inside DuckDB on a locked-down connection; the three storage assets
materialised into a temporary DuckDB; and the demo's storage figures against hand-computed Decimal values
(cost = GiB x price per GB-month x held share of November).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

import dagster as dg
import duckdb
import pandas as pd
import pytest

from cost_pipeline.defs.ingest import source_assets
from cost_pipeline.defs.resources import LandingZone, Warehouse
from cost_pipeline.ingest.lib.records import FileRejected
from cost_pipeline.ingest.lib.warehouse import IngestReport, connect
from cost_pipeline.ingest.storage import date_from_name, load_storage_inventory
from tests.helpers import query

ASSETS = {a.key.path[-1]: a for a in source_assets}
GIB = 1 << 30
NOV_30 = datetime(2026, 11, 30)
SCHEMA = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass, IsLatest, EncryptionStatus"


def _manifest(folder: Path, data_names: list[str], created_ms: str = "1795996800000", schema: str = SCHEMA) -> None:
    document = {
        "sourceBucket": "ml-prod",
        "destinationBucket": "arn:aws:s3:::inv",
        "version": "2016-11-30",
        "creationTimestamp": created_ms,
        "fileFormat": "CSV",
        "fileSchema": schema,
        "files": [{"key": f"ml-prod/cfg/data/{n}", "size": 1, "MD5checksum": "0" * 32} for n in data_names],
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps(document), encoding="utf-8")


ROWS = (
    '"ml-prod","raw/b7/a%20b+c.bin","1073741824","2026-10-15T00:00:00.000Z","e1","STANDARD","true","SSE-S3"\n'
    '"ml-prod","raw/b7/x.bin","not-a-size","2026-10-15T00:00:00.000Z","e2","STANDARD","true","SSE-S3"\n'
)


# --- each file shape, loaded inside DuckDB on a locked-down connection --------------------------------------------


@dataclass
class Loaded:
    report: IngestReport
    rows: list[dict[str, object]]  # raw.storage_inventory, by file and line
    quarantined: list[tuple[str, int, str]]  # (file, line, rule)
    ledger: dict[str, tuple[int, int, int]]  # file -> (rows in, staged, quarantined)


def _load(landing: Path) -> Loaded:
    con = connect(landing.parent / "w.duckdb", readable_dir=landing)
    try:
        report = load_storage_inventory(con, landing)
        cursor = con.execute("select * from raw.storage_inventory order by source_file, source_line")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
        quarantined = con.execute("select source_file, line, rule from raw.quarantine order by 1, 2").fetchall()
        ledger = {
            f: (i, s, q)
            for f, i, s, q in con.execute(
                "select source_file, rows_in, rows_staged, rows_quarantined from raw.ingested_files"
            ).fetchall()
        }
    finally:
        con.close()
    return Loaded(report, rows, quarantined, ledger)


def _storage(tmp_path: Path) -> Path:
    folder = tmp_path / "landing" / "storage"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_headerless_csv_takes_columns_and_date_from_its_manifest(tmp_path):
    storage = _storage(tmp_path)
    _manifest(storage, ["inv-1.csv"])
    (storage / "inv-1.csv").write_text(ROWS, encoding="utf-8")
    loaded = _load(tmp_path / "landing")
    assert loaded.ledger == {"storage/inv-1.csv": (2, 1, 1)}
    first = loaded.rows[0]
    # AWS URL-encodes CSV keys (a space as %20 or +); extra fields (IsLatest, EncryptionStatus) are ignored.
    assert first["object_key"] == "raw/b7/a b c.bin"
    assert first["size_bytes"] == GIB and first["storage_class"] == "STANDARD" and first["etag"] == "e1"
    assert first["last_modified_at"] == datetime(2026, 10, 15)
    assert first["inventory_at"] == NOV_30 and first["inventory_date_from"] == "manifest"
    assert first["source_line"] == 1 and first["version_id"] is None
    assert set(first) == {
        "bucket",
        "object_key",
        "version_id",
        "size_bytes",
        "last_modified_at",
        "etag",
        "storage_class",
        "inventory_at",
        "inventory_date_from",
        "source_file",
        "source_line",
        "file_sha256",
    }
    assert loaded.quarantined == [("storage/inv-1.csv", 2, "size_bytes.non_negative")]


def test_gzip_data_file_with_its_manifest_keeps_its_line_numbers(tmp_path):
    storage = _storage(tmp_path)
    _manifest(storage, ["inv-1.csv.gz"])
    lines = ROWS.replace("not-a-size", "7").splitlines()
    text = "\n".join([lines[0], "", lines[1], '"ml-prod","only","two"']) + "\n"  # an empty line, a broken one
    (storage / "inv-1.csv.gz").write_bytes(gzip.compress(text.encode("utf-8")))
    loaded = _load(tmp_path / "landing")
    assert [(r["object_key"], r["source_line"]) for r in loaded.rows] == [("raw/b7/a b c.bin", 1), ("raw/b7/x.bin", 3)]
    assert loaded.quarantined == [("storage/inv-1.csv.gz", 4, "csv_structure")]
    assert loaded.ledger == {"storage/inv-1.csv.gz": (3, 2, 1)}


def test_csv_keys_are_url_decoded_as_aws_encodes_them(tmp_path):
    storage = _storage(tmp_path)
    keys = {
        "a+b.bin": "a b.bin",
        "a%2Bb.bin": "a+b.bin",
        "c%20d+%2B%2b.bin": "c d ++.bin",
        "%E6%89%B9%E6%AC%A1/x": "批次/x",
        "100%25.txt": "100%.txt",
        "%zz": "%zz",
    }
    body = "".join(f"b,{k},1,2026-11-01T00:00:00Z,e,STANDARD\n" for k in keys)
    (storage / "inv_2026-11-30.csv").write_text(
        "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass\n" + body, encoding="utf-8"
    )
    loaded = _load(tmp_path / "landing")
    assert [r["object_key"] for r in loaded.rows] == list(keys.values())
    assert loaded.quarantined == []


def test_a_key_that_decodes_to_no_text_is_quarantined(tmp_path):
    storage = _storage(tmp_path)
    (storage / "inv_2026-11-30.csv").write_text(
        "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass\nb,%FF%FE,1,2026-11-01T00:00:00Z,e,STANDARD\n",
        encoding="utf-8",
    )
    assert _load(tmp_path / "landing").quarantined == [("storage/inv_2026-11-30.csv", 2, "object_key.present")]


def test_header_csv_takes_its_date_from_the_file_name(tmp_path):
    path = _storage(tmp_path) / "ml-prod_2026-11-30T01-00Z.csv"
    path.write_text(
        "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass,IsLatest\n"
        "ml-prod,k1,5,2026-11-02T00:00:00Z,e,GLACIER,true\n",
        encoding="utf-8",
    )
    loaded = _load(tmp_path / "landing")
    assert loaded.quarantined == []
    assert loaded.rows[0]["inventory_at"] == datetime(2026, 11, 30, 1, 0)
    assert loaded.rows[0]["inventory_date_from"] == "file_name"
    assert loaded.rows[0]["source_line"] == 2


def test_a_bucket_that_did_not_change_keeps_every_days_inventory(tmp_path):
    """The same bytes on another day are that day's inventory, not a duplicate; the same day twice is."""
    storage = _storage(tmp_path)
    data = "Bucket,Key,Size,LastModifiedDate,StorageClass\nml-archive,k1,5,2026-01-02T00:00:00Z,GLACIER\n"
    for name in ("ml-archive_2026-11-30.csv", "ml-archive_2026-12-31.csv", "ml-archive_again_2026-12-31.csv"):
        (storage / name).write_text(data, encoding="utf-8")
    for day, folder in (("1795996800000", "nov"), ("1798675200000", "dec")):  # 2026-11-30, 2026-12-31
        (storage / folder).mkdir()
        (storage / folder / "data.csv").write_text("ml-archive,k2,7,2026-01-02T00:00:00Z,GLACIER\n", encoding="utf-8")
        _manifest(
            storage / folder, ["data.csv"], created_ms=day, schema="Bucket, Key, Size, LastModifiedDate, StorageClass"
        )
    loaded = _load(tmp_path / "landing")
    assert sorted((row["object_key"], row["inventory_at"].date().isoformat()) for row in loaded.rows) == [
        ("k1", "2026-11-30"),
        ("k1", "2026-12-31"),
        ("k2", "2026-11-30"),
        ("k2", "2026-12-31"),
    ]
    assert loaded.report.duplicates == [
        ("storage/ml-archive_again_2026-12-31.csv", "storage/ml-archive_2026-12-31.csv")
    ]


def test_a_manifest_of_the_wrong_shape_does_not_stop_the_load(tmp_path):
    storage = _storage(tmp_path)
    (storage / "manifest.json").write_text(json.dumps({"files": 1}), encoding="utf-8")
    (storage / "x_manifest.json").mkdir()  # a folder, not a file
    (storage / "inv-1.csv").write_text(ROWS, encoding="utf-8")
    (storage / "ml-prod_2026-11-30.csv").write_text(
        "Bucket,Key,Size,LastModifiedDate,StorageClass\nml-prod,k1,5,2026-11-02T00:00:00Z,STANDARD\n", encoding="utf-8"
    )
    loaded = _load(tmp_path / "landing")
    # Neither is a manifest listing inv-1.csv, which has no header: quarantined whole, and the night goes on.
    assert loaded.quarantined == [("storage/inv-1.csv", 0, "inventory_schema")]
    assert [row["object_key"] for row in loaded.rows] == ["k1"]


def test_bad_sizes_are_quarantined_with_file_line_and_rule(tmp_path):
    storage = _storage(tmp_path)
    (storage / "inv_2026-11-30.csv").write_text(
        "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass,IsDeleteMarker\n"
        "b,ok,5,2026-11-02T00:00:00+02:00,e,STANDARD,false\n"
        "b,negative,-5,2026-11-02T00:00:00Z,e,STANDARD,false\n"
        "b,words,twelve,2026-11-02T00:00:00Z,e,STANDARD,false\n"
        "b,fraction,1.5,2026-11-02T00:00:00Z,e,STANDARD,false\n"
        "b,marker,,2026-11-02,,STANDARD,true\n"
        "b,missing,,2026-11-02,e,STANDARD,false\n"
        "b,late,1,yesterday,e,STANDARD,false\n"
        "b,huge,200000000000000000,2026-11-02,e,STANDARD,false\n"
        "b,past_bigint,99999999999999999999,2026-11-02,e,STANDARD,false\n",
        encoding="utf-8",
    )
    loaded = _load(tmp_path / "landing")
    assert [(r["object_key"], r["size_bytes"], r["last_modified_at"]) for r in loaded.rows] == [
        ("ok", 5, datetime(2026, 11, 1, 22, 0)),  # an offset is converted to UTC
        ("marker", 0, datetime(2026, 11, 2)),
    ]  # a delete marker holds no bytes
    assert loaded.quarantined == [
        ("storage/inv_2026-11-30.csv", line, rule)
        for line, rule in [
            (3, "size_bytes.non_negative"),
            (4, "size_bytes.non_negative"),
            (5, "size_bytes.whole_number"),
            (7, "size_bytes.non_negative"),
            (8, "last_modified_at.timestamp"),
            (9, "size_bytes.too_large"),  # a size over the domain (schemas.BYTES) is too large, not negative
            (10, "size_bytes.too_large"),
        ]
    ]
    assert loaded.report.examples[0] == (
        "storage/inv_2026-11-30.csv, line 3: rule size_bytes.non_negative: size_bytes should hold "
        "a non-negative number of bytes such as 1048576, from 0 to 100,000,000,000,000,000"
    )


def test_parquet_with_aws_column_names(tmp_path):
    path = _storage(tmp_path) / "archive_2026-11-30.parquet"
    frame = pd.DataFrame(
        {
            "bucket": ["ml-archive"],
            "key": ["raw/a+b%20.bin"],
            "size": [3 * GIB],
            "last_modified_date": [pd.Timestamp("2026-11-15T06:00:00+01:00")],
            "e_tag": ["e"],
            "storage_class": ["GLACIER"],
            "is_latest": [True],
        }
    )
    con = duckdb.connect()
    con.from_df(frame).write_parquet(str(path))
    con.close()
    loaded = _load(tmp_path / "landing")
    assert loaded.quarantined == [] and loaded.ledger == {"storage/archive_2026-11-30.parquet": (1, 1, 0)}
    row = loaded.rows[0]
    assert row["object_key"] == "raw/a+b%20.bin"  # Parquet keys are not URL-encoded
    assert row["size_bytes"] == 3 * GIB and row["etag"] == "e"
    assert row["last_modified_at"] == datetime(2026, 11, 15, 5, 0)  # converted to UTC
    assert row["inventory_at"] == NOV_30 and row["source_line"] == 1


@pytest.mark.parametrize(
    ("name", "content", "manifest", "rule"),
    [
        (
            "inventory.csv",
            "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass\nb,k,1,2026-11-01T00:00:00Z,e,S\n",
            None,
            "inventory_date",
        ),
        ("inv_2026-11-31.csv", "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass\n", None, "inventory_date"),
        ("inv_2026-11-30.csv", ROWS, None, "inventory_schema"),
        ("inv-1.csv.gz", ROWS, None, "inventory_schema"),
        ("inv_2026-11-30.csv", "Bucket,Key,ETag\nb,k,e\n", None, "csv_header"),
        ("inv-1.csv", ROWS, {"created_ms": "yesterday"}, "inventory_manifest"),
        ("inv-1.csv", ROWS, {"schema": "Bucket, Key, ETag"}, "inventory_manifest"),
        ("inv-1.csv.gz", ROWS, {}, "file_compression"),
        ("inv_2026-11-30.parquet", "not parquet", None, "file_format"),
    ],
)
def test_bad_files_are_quarantined_whole_with_a_rule(tmp_path, name, content, manifest, rule):
    storage = _storage(tmp_path)
    if manifest is not None:
        _manifest(storage, [name], **manifest)
    data = content.encode("utf-8")
    if name.endswith(".gz") and manifest is None:
        data = gzip.compress(data)
    (storage / name).write_bytes(data)
    loaded = _load(tmp_path / "landing")
    assert loaded.rows == [] and loaded.ledger == {f"storage/{name}": (1, 0, 1)}
    assert loaded.quarantined == [(f"storage/{name}", 0, rule)]


def test_a_broken_manifest_beside_a_headerless_file_is_named(tmp_path):
    storage = _storage(tmp_path)
    (storage / "manifest.json").write_text("{not json", encoding="utf-8")
    (storage / "inv-1.csv").write_text(ROWS, encoding="utf-8")
    assert [rule for _, _, rule in _load(tmp_path / "landing").quarantined] == ["inventory_manifest"]


def test_parquet_without_required_fields_is_quarantined(tmp_path):
    path = _storage(tmp_path) / "inv_2026-11-30.parquet"
    con = duckdb.connect()
    con.from_df(pd.DataFrame({"bucket": ["b"], "key": ["k"]})).write_parquet(str(path))
    con.close()
    loaded = _load(tmp_path / "landing")
    assert loaded.quarantined == [("storage/inv_2026-11-30.parquet", 0, "parquet_schema")]
    assert loaded.ledger == {"storage/inv_2026-11-30.parquet": (1, 0, 1)}


def test_every_file_is_conserved_and_a_glob_name_reads_only_itself(tmp_path):
    storage = _storage(tmp_path)
    header = "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass\n"
    good = "b,k,1,2026-11-01T00:00:00Z,e,STANDARD\n"
    (storage / "a_2026-11-30.csv").write_text(header + good * 3 + "b,k,-1,2026-11-01,e,S\nb,k\n", encoding="utf-8")
    (storage / "a*_2026-11-30.csv").write_text(header + good, encoding="utf-8")
    (storage / "copy_2026-11-30.csv").write_bytes((storage / "a*_2026-11-30.csv").read_bytes())
    (storage / "undated.csv").write_text(header + good + good, encoding="utf-8")
    (storage / "prefix_rules.csv").write_text("bucket,prefix,purpose,owner,batch_id,retention_days\n")
    loaded = _load(tmp_path / "landing")
    assert loaded.ledger == {
        "storage/a_2026-11-30.csv": (5, 3, 2),
        "storage/a*_2026-11-30.csv": (1, 1, 0),
        "storage/copy_2026-11-30.csv": (0, 0, 0),
        "storage/undated.csv": (2, 0, 2),
    }
    assert all(rows_in == staged + quarantined for rows_in, staged, quarantined in loaded.ledger.values())
    report = loaded.report
    assert report.conserved and report.files == 4 and report.duplicate_files == 1
    assert (report.rows_in, report.rows_staged, report.rows_quarantined) == (8, 4, 4)  # undated.csv: its 2 rows


# --- assets into a temporary DuckDB ------------------------------------------------------------------------------


def _materialize(landing: Path, warehouse: Path, *names: str) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [ASSETS[n] for n in names],
        instance=dg.DagsterInstance.ephemeral(),
        resources={"landing": LandingZone(path=str(landing)), "warehouse": Warehouse(path=str(warehouse))},
    )


def test_storage_assets_conserve_rows_and_quarantine_with_file_line_rule(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "w.duckdb"
    storage = landing / "storage"
    _manifest(storage / "ml-prod" / "2026-11-30T00-00Z", ["d1.csv.gz"])
    (storage / "ml-prod" / "2026-11-30T00-00Z" / "d1.csv.gz").write_bytes(gzip.compress(ROWS.encode("utf-8")))
    (storage / "undated.csv").write_text("Bucket,Key,Size,LastModifiedDate,ETag,StorageClass\n", encoding="utf-8")
    (storage / "prefix_rules.csv").write_text(
        "bucket,prefix,purpose,owner,batch_id,retention_days\n"
        "ml-prod,raw/,raw,data-team,B-7,\n"
        "ml-prod,tmp/,not_a_purpose,,,\n"
        "ml-prod,logs/,log,,,-1\n",
        encoding="utf-8",
    )
    (storage / "storage_prices.csv").write_text(
        "storage_class,price_per_gb_month\nSTANDARD,0.023\nGLACIER,cheap\nSTANDARD,0.024\n", encoding="utf-8"
    )
    result = _materialize(landing, warehouse, "storage_inventory", "storage_prefix_rules", "storage_prices")
    assert result.success

    ledger = query(
        warehouse,
        "select source, source_file, rows_in, rows_staged, rows_quarantined "
        "from raw.ingested_files where source like 'storage%' order by 1, 2",
    )
    assert ledger == [
        ("storage_inventory", "storage/ml-prod/2026-11-30T00-00Z/d1.csv.gz", 2, 1, 1),
        ("storage_inventory", "storage/undated.csv", 1, 0, 1),
        ("storage_prefix_rules", "storage/prefix_rules.csv", 3, 1, 2),
        ("storage_prices", "storage/storage_prices.csv", 3, 1, 2),
    ]
    quarantined = query(
        warehouse, "select source_file, line, rule from raw.quarantine where source like 'storage%' order by 1, 2"
    )
    assert quarantined == [
        ("storage/ml-prod/2026-11-30T00-00Z/d1.csv.gz", 2, "size_bytes.non_negative"),
        ("storage/prefix_rules.csv", 3, "purpose.isin"),
        ("storage/prefix_rules.csv", 4, "retention_days.non_negative"),
        ("storage/storage_prices.csv", 3, "price_per_gb_month.str_matches"),
        ("storage/storage_prices.csv", 4, "storage_class.unique"),
        ("storage/undated.csv", 0, "inventory_date"),
    ]
    assert query(warehouse, "select bucket, object_key, size_bytes, inventory_at from raw.storage_inventory") == [
        ("ml-prod", "raw/b7/a b c.bin", GIB, NOV_30)
    ]
    assert query(warehouse, "select storage_class, price_per_gb_month from raw.storage_prices") == [
        ("STANDARD", Decimal("0.023000"))
    ]


# --- the demo, end to end, against hand-computed figures ---------------------------------------------------------


def _cost(gib: int, price: str, held_days: int) -> Fraction:
    """GiB x price per GB-month x held days / 30 (November), exact."""
    return gib * Fraction(price) * Fraction(held_days, 30)


def _rounded(value: Fraction, places: str = "0.01") -> Decimal:
    """An exact fraction rounded half-up once (to the cent unless told)."""
    whole = Decimal(value.numerator) / Decimal(value.denominator)  # 28 significant digits: ample here
    return whole.quantize(Decimal(places), ROUND_HALF_UP)


STANDARD, STANDARD_IA, GLACIER = "0.023", "0.0125", "0.004"
# (bucket, key): (batch, purpose, GiB, price, days held to 2026-11-30). Written before November: 29 days.
DEMO_OBJECTS = {
    ("ml-prod", "raw/b7/part-0000.parquet"): ("B-7", "raw", 3000, STANDARD, 29),
    ("ml-prod", "checkpoints/b7/step 1000.ckpt"): ("B-7", "checkpoint", 600, STANDARD, 20),
    ("ml-prod", "checkpoints/b7/step-2000.ckpt"): ("B-7", "checkpoint", 600, STANDARD, 14),
    ("ml-prod", "backup/b7/step-2000.ckpt"): ("B-7", "backup", 600, GLACIER, 10),
    ("ml-prod", "eval/b7/results.jsonl"): ("B-7", "eval_result", 120, STANDARD_IA, 5),
    ("ml-prod", "logs/b7/train.log"): ("B-7", "log", 300, STANDARD, 29),
    ("ml-prod", "raw/b8/shard-000.parquet"): ("B-8", "raw", 1500, STANDARD, 29),
    ("ml-prod", "checkpoints/b8/step-500.ckpt"): ("B-8", "checkpoint", 600, STANDARD, 10),
    ("ml-prod", "models/b8/candidates/cand-1.safetensors"): ("B-8", "candidate_model", 150, STANDARD, 6),
    ("ml-prod", "scratch/tmp-dump.bin"): ("unattributed", None, 600, STANDARD, 29),
    # Listed by the inventory of the 23rd only (written the 2nd): deleted before the 30th, held 21 days.
    ("ml-prod", "scratch/old-dump.bin"): ("unattributed", None, 900, STANDARD, 21),
    ("ml-archive", "raw/b8/shard-000.parquet"): ("B-8", "backup", 1500, GLACIER, 15),
    ("ml-archive", "tmp/unpriced.bin"): ("unattributed", None, 10, None, 29),
}


def test_demo_storage_cost_per_object(demo_run):
    assert demo_run.succeeded
    rows = demo_run.query(
        "select bucket, object_key, batch_id, purpose, size_bytes, storage_cost, is_unpriced, "
        "month_start from intermediate.int_storage_objects_costed"
    )
    got = {
        (b, k): (batch, purpose, size, cost, unpriced, month)
        for b, k, batch, purpose, size, cost, unpriced, month in rows
    }
    # Each object from its last listing: scratch/old-dump.bin, in the earlier inventory of the month (2026-11-23)
    # and not in the 30th's, is charged until the 23rd.
    assert set(got) == set(DEMO_OBJECTS)
    for place, (batch, purpose, gib, price, days) in DEMO_OBJECTS.items():
        cost = _rounded(Fraction(0) if price is None else _cost(gib, price, days), "0.000001")
        assert got[place] == (batch, purpose, gib * GIB, cost, price is None, datetime(2026, 11, 1).date()), place
    # 3000 GiB x 0.023 x 29/30 = 66.70; by hand, for the reader:
    assert got[("ml-prod", "raw/b7/part-0000.parquet")][3] == Decimal("66.700000")


def test_demo_storage_cost_per_batch(demo_run):
    rows = demo_run.query(
        "select batch_id, cast(round(sum(storage_cost), 2) as decimal(18, 2)) "
        "from intermediate.int_storage_objects_costed group by batch_id"
    )
    expected: dict[str, Fraction] = {}
    for batch, _, gib, price, days in DEMO_OBJECTS.values():
        expected[batch] = expected.get(batch, Fraction(0)) + (0 if price is None else _cost(gib, price, days))
    assert dict(rows) == {batch: _rounded(total) for batch, total in expected.items()}
    # 66.70 + 9.20 + 6.44 + 0.80 + 0.25 + 6.67; 33.35 + 4.60 + 0.69 + 3.00; 13.34 + 14.49 + 0.00 (unpriced)
    assert dict(rows) == {"B-7": Decimal("90.06"), "B-8": Decimal("41.64"), "unattributed": Decimal("27.83")}


def test_a_prefix_filtered_inventory_delivered_later_hides_no_other_object(demo_copy):
    """A second inventory configuration of ml-prod, filtered to logs/, delivered on the 30th at 06:00, after the
    whole-bucket one of 00:00. Each object counts from its last listing: the log six hours longer, every other object
    as before (the bucket's latest inventory alone, as before, kept the log and dropped the rest)."""
    from tests.helpers import cli_night

    landing, warehouse = demo_copy / "landing", demo_copy / "warehouse.duckdb"
    before = dict(
        query(
            warehouse,
            "select object_key, storage_cost from intermediate.int_storage_objects_costed where bucket = 'ml-prod'",
        )
    )
    (landing / "storage" / "ml-prod-logs_inventory_2026-11-30T06-00Z.csv").write_text(
        "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass\n"
        f"ml-prod,logs/b7/train.log,{300 * GIB},2026-09-30T00:00:00.000Z,5e6f708192a3b4c5d6e7f8091a2b3c4d,STANDARD\n",
        encoding="utf-8",
    )
    night = cli_night(landing, warehouse)
    assert night.code == 0, night.err
    after = dict(
        query(
            warehouse,
            "select object_key, storage_cost from intermediate.int_storage_objects_costed where bucket = 'ml-prod'",
        )
    )
    assert set(after) == set(before)
    # 300 GiB x 0.023 x (29 days + 6 hours) / 30 days = 6.73875; the other objects unchanged.
    assert after.pop("logs/b7/train.log") == _rounded(
        300 * Fraction(STANDARD) * Fraction(29 * 24 + 6, 30 * 24), "0.000001"
    )
    before.pop("logs/b7/train.log")
    assert after == before
    # The log is past its retention once, not twice; the deleted scratch/old-dump.bin is no finding.
    findings = query(
        warehouse,
        "select finding, object_key from marts.fct_storage_governance where bucket = 'ml-prod' order by 1, 2",
    )
    assert ("past_retention", "logs/b7/train.log") in findings
    assert not [key for _, key in findings if key == "scratch/old-dump.bin"]


def test_demo_storage_governance_rows(demo_run):
    rows = demo_run.query(
        "select finding, bucket, object_key, batch_id, owner, purpose, retention_days, "
        "duplicate_count, duplicate_of, monthly_cost, is_unpriced "
        "from marts.fct_storage_governance order by finding, bucket, object_key"
    )
    assert rows == [
        (
            "duplicate",
            "ml-archive",
            "raw/b8/shard-000.parquet",
            "B-8",
            "platform-team",
            "backup",
            365,
            2,
            "s3://ml-prod/raw/b8/shard-000.parquet",
            Decimal("3.00"),
            False,
        ),
        (
            "duplicate",
            "ml-prod",
            "backup/b7/step-2000.ckpt",
            "B-7",
            "platform-team",
            "backup",
            365,
            2,
            "s3://ml-prod/checkpoints/b7/step-2000.ckpt",
            Decimal("0.80"),
            False,
        ),
        (
            "duplicate",
            "ml-prod",
            "checkpoints/b7/step-2000.ckpt",
            "B-7",
            "training-team",
            "checkpoint",
            90,
            2,
            "s3://ml-prod/backup/b7/step-2000.ckpt",
            Decimal("6.44"),
            False,
        ),
        (
            "duplicate",
            "ml-prod",
            "raw/b8/shard-000.parquet",
            "B-8",
            "data-team",
            "raw",
            365,
            2,
            "s3://ml-archive/raw/b8/shard-000.parquet",
            Decimal("33.35"),
            False,
        ),
        (
            "no_owner_or_purpose",
            "ml-archive",
            "tmp/unpriced.bin",
            "unattributed",
            None,
            None,
            None,
            1,
            None,
            Decimal("0.00"),
            True,
        ),
        (
            "no_owner_or_purpose",
            "ml-prod",
            "scratch/tmp-dump.bin",
            "unattributed",
            None,
            None,
            None,
            1,
            None,
            Decimal("13.34"),
            False,
        ),
        # The rule's 30 days: written 2026-09-30, kept until 2026-10-30, still there on 2026-11-30.
        (
            "past_retention",
            "ml-prod",
            "logs/b7/train.log",
            "B-7",
            "platform-team",
            "log",
            30,
            1,
            None,
            Decimal("6.67"),
            False,
        ),
    ]


def test_demo_storage_sources_conserved(demo_run):
    rows = demo_run.query(
        "select source, sum(rows_in), sum(rows_staged), sum(rows_quarantined) "
        "from raw.ingested_files where source like 'storage%' group by source order by source"
    )
    assert rows == [("storage_inventory", 13, 13, 0), ("storage_prefix_rules", 10, 10, 0), ("storage_prices", 3, 3, 0)]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("inventory.csv", "its name should then hold the inventory date, such as inventory_2026-11-30.csv"),
        ("inventory_2026-13-45.csv", "the date in the file name should be a calendar date such as 2026-11-30"),
    ],
)
def test_an_undated_inventory_is_refused_in_words_with_an_example(name, expected):
    with pytest.raises(FileRejected) as error:
        date_from_name(Path(name))
    assert error.value.rule == "inventory_date" and expected in str(error.value)
    assert "13-45" not in str(error.value)


def test_an_object_modified_after_the_inventory_that_lists_it_is_quarantined(tmp_path):
    """An inventory lists objects as they were when it was taken: a LastModifiedDate after it is impossible, and
    held from then the object would be held 0 seconds and cost 0.00 however large. A day's grace (AWS takes an
    inventory over hours; a date in a file name has no time of day)."""
    storage = _storage(tmp_path)
    (storage / "ml-prod_inventory_2026-11-23.csv").write_text(
        "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass\n"
        "ml-prod,raw/b7/future.bin,1073741824000,2090-01-01T00:00:00.000Z,aa,STANDARD\n"
        "ml-prod,raw/b7/same_day.bin,1,2026-11-23T10:00:00.000Z,bb,STANDARD\n"
        "ml-prod,raw/b7/a_day_after.bin,1,2026-11-24T00:00:00.000Z,cc,STANDARD\n"
        "ml-prod,raw/b7/past_the_day.bin,1,2026-11-24T00:00:01.000Z,dd,STANDARD\n",
        encoding="utf-8",
    )
    data = storage / "ml-prod" / "cfg" / "data"
    data.mkdir(parents=True)
    _manifest(storage / "ml-prod" / "cfg" / "2026-11-30T01-00Z", ["inv-1.csv"])  # taken 2026-11-30T00:00Z
    (data / "inv-1.csv").write_text(
        '"ml-prod","raw/b7/kept.bin","5","2026-11-29T00:00:00.000Z","e1","STANDARD","true","SSE-S3"\n'
        '"ml-prod","raw/b7/future.bin","5","2090-01-01T00:00:00.000Z","e2","STANDARD","true","SSE-S3"\n',
        encoding="utf-8",
    )
    loaded = _load(tmp_path / "landing")
    assert [r["object_key"] for r in loaded.rows] == [
        "raw/b7/kept.bin",
        "raw/b7/same_day.bin",
        "raw/b7/a_day_after.bin",
    ]
    assert loaded.quarantined == [
        ("storage/ml-prod/cfg/data/inv-1.csv", 2, "last_modified_at.after_inventory"),
        ("storage/ml-prod_inventory_2026-11-23.csv", 2, "last_modified_at.after_inventory"),
        ("storage/ml-prod_inventory_2026-11-23.csv", 5, "last_modified_at.after_inventory"),
    ]
    assert loaded.report.conserved


def test_an_unpriced_storage_object_leaves_its_batch_unpriced_not_short(demo_run):
    """No silent zero: the demo's tmp/unpriced.bin (INTELLIGENT_TIERING, which storage_prices.csv does not price) is
    a storage line with a null amount, so the unattributed batch's storage and total cost are null and flagged, and
    the night's summary names it. The batch's storage used to be 27.83 (the priced objects), is_unpriced false."""
    import io

    from cost_pipeline.cli import report

    lines = demo_run.query(
        "select batch_id, cost_detail, amount, is_unpriced from marts.fct_cost_lines "
        "where cost_source = 'storage_inventory' order by 1, 2"
    )
    assert ("unattributed", "no_purpose", None, True) in lines
    assert all(amount is not None and not unpriced for batch, _, amount, unpriced in lines if batch != "unattributed")
    costs = {
        r[0]: r[1:]
        for r in demo_run.query(
            "select batch_id, storage_cost, total_cost, measured_cost, compute_cost, is_unpriced "
            "from marts.fct_batch_costs"
        )
    }
    storage, total, measured, compute, unpriced = costs["unattributed"]
    assert (storage, total, measured, unpriced) == (None, None, None, True)
    assert compute is not None  # its compute is priced: only what rests on the unpriced object is unknown
    assert costs["B-7"][0] == Decimal("90.06") and costs["B-7"][4] is False
    assert costs["B-8"][0] == Decimal("41.64") and costs["B-8"][4] is False
    out = io.StringIO()
    report(demo_run.warehouse, out)
    (line,) = [line for line in out.getvalue().splitlines() if line.startswith("Unpriced storage")]
    assert line.endswith(": 2026-11 unattributed (no_purpose)")


def test_a_price_written_in_another_case_and_an_overwritten_key_are_both_charged(demo_copy):
    """A price list spelling the class `Standard` prices AWS's STANDARD (it used to price nothing: B-7's storage fell
    from 90.06 to 1.05 with no sign). And a key overwritten in an unversioned bucket is charged for both writes: the
    inventory of the 10th lists checkpoints/b7/step-2000.ckpt as written 1 October (600 GiB), the 30th's as written
    the 16th; the old bytes were held 1-16 November: 600 x 0.023 x 15/30 = 6.90 (never charged before: B-7 stayed
    90.06)."""
    from tests.helpers import cli_night

    landing, warehouse = demo_copy / "landing", demo_copy / "warehouse.duckdb"
    prices = landing / "storage" / "storage_prices.csv"
    text = prices.read_text(encoding="utf-8")
    assert "STANDARD,0.023" in text
    prices.write_text(text.replace("STANDARD,0.023", "Standard,0.023"), encoding="utf-8")
    (landing / "storage" / "ml-prod_inventory_2026-11-10.csv").write_text(
        "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass\n"
        f"ml-prod,checkpoints/b7/step-2000.ckpt,{600 * GIB},2026-10-01T00:00:00.000Z,"
        "0a1b2c3d4e5f60718293a4b5c6d7e8f9,STANDARD\n",
        encoding="utf-8",
    )
    night = cli_night(landing, warehouse)
    assert night.code == 0, night.err

    versions = query(
        warehouse,
        "select last_modified_at, storage_cost, is_current, is_unpriced from intermediate.int_storage_objects_costed "
        "where object_key = 'checkpoints/b7/step-2000.ckpt' order by 1",
    )
    assert versions == [
        (datetime(2026, 10, 1), _rounded(_cost(600, STANDARD, 15), "0.000001"), False, False),
        (datetime(2026, 11, 16), _rounded(_cost(600, STANDARD, 14), "0.000001"), True, False),
    ]
    assert versions[0][1] == Decimal("6.900000")
    storage = dict(
        query(warehouse, "select batch_id, storage_cost from marts.fct_batch_costs where batch_id <> 'B-10'")
    )
    assert storage == {"B-7": Decimal("96.96"), "B-8": Decimal("41.64"), "unattributed": None}
    # The overwritten bytes are gone at the month's end: no finding, no duplicate of its ETag.
    assert not query(
        warehouse,
        "select 1 from marts.fct_storage_governance where etag = '0a1b2c3d4e5f60718293a4b5c6d7e8f9'",
    )
