"""Storage inventories (I6) and storage governance (R19).

Pure parsing of S3 Inventory files as AWS writes them (manifest + header-less CSV, gzip, header CSV, Parquet, bad
files quarantined with a rule); the three storage assets materialised into a temporary DuckDB; and the demo's
storage figures against hand-computed Decimal values (cost = GiB x price per GB-month x held share of November).
"""

from __future__ import annotations

import gzip
import json
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
from cost_pipeline.ingest.s3_inventory import parse_inventory

ASSETS = {a.key.path[-1]: a for a in source_assets}
GIB = 1 << 30
NOV_30 = datetime(2026, 11, 30)
SCHEMA = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass, IsLatest, EncryptionStatus"


def _manifest(folder: Path, data_names: list[str], created_ms: str = "1795996800000",
              schema: str = SCHEMA) -> None:
    document = {"sourceBucket": "ml-prod", "destinationBucket": "arn:aws:s3:::inv", "version": "2016-11-30",
                "creationTimestamp": created_ms, "fileFormat": "CSV", "fileSchema": schema,
                "files": [{"key": f"ml-prod/cfg/data/{n}", "size": 1, "MD5checksum": "0" * 32} for n in data_names]}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.json").write_text(json.dumps(document), encoding="utf-8")


ROWS = ('"ml-prod","raw/b7/a%20b+c.bin","1073741824","2026-10-15T00:00:00.000Z","e1","STANDARD","true","SSE-S3"\n'
        '"ml-prod","raw/b7/x.bin","not-a-size","2026-10-15T00:00:00.000Z","e2","STANDARD","true","SSE-S3"\n')


# --- pure parsing -------------------------------------------------------------------------------------------------

def test_headerless_csv_takes_columns_and_date_from_its_manifest(tmp_path):
    _manifest(tmp_path, ["inv-1.csv"])
    (tmp_path / "inv-1.csv").write_text(ROWS, encoding="utf-8")
    parsed = parse_inventory(tmp_path / "inv-1.csv")
    assert parsed.rows_in == 2 and parsed.rejections == []
    first = parsed.rows[0]
    # AWS URL-encodes CSV keys (a space as %20 or +); extra fields (IsLatest, EncryptionStatus) are ignored.
    assert first["object_key"] == "raw/b7/a b c.bin"
    assert first["size_bytes"] == "1073741824" and first["storage_class"] == "STANDARD" and first["etag"] == "e1"
    assert first["last_modified_at"] == datetime(2026, 10, 15)
    assert first["inventory_at"] == NOV_30 and first["inventory_date_from"] == "manifest"
    assert [r["source_line"] for r in parsed.rows] == [1, 2]
    assert "IsLatest" not in first and "EncryptionStatus" not in first


def test_gzip_data_file_is_read_like_plain_csv(tmp_path):
    _manifest(tmp_path, ["inv-1.csv.gz"])
    (tmp_path / "inv-1.csv.gz").write_bytes(gzip.compress(ROWS.encode("utf-8")))
    parsed = parse_inventory(tmp_path / "inv-1.csv.gz")
    assert [r["object_key"] for r in parsed.rows] == ["raw/b7/a b c.bin", "raw/b7/x.bin"]


def test_header_csv_takes_its_date_from_the_file_name(tmp_path):
    path = tmp_path / "ml-prod_2026-11-30T01-00Z.csv"
    path.write_text("Bucket,Key,Size,LastModifiedDate,ETag,StorageClass,IsLatest\n"
                    "ml-prod,k1,5,2026-11-02T00:00:00Z,e,GLACIER,true\n", encoding="utf-8")
    parsed = parse_inventory(path)
    assert parsed.rejections == []
    assert parsed.rows[0]["inventory_at"] == datetime(2026, 11, 30, 1, 0)
    assert parsed.rows[0]["inventory_date_from"] == "file_name"
    assert parsed.rows[0]["source_line"] == 2


def test_parquet_with_aws_column_names(tmp_path):
    path = tmp_path / "archive_2026-11-30.parquet"
    frame = pd.DataFrame({"bucket": ["ml-archive"], "key": ["raw/a b.bin"], "size": [3 * GIB],
                          "last_modified_date": [pd.Timestamp("2026-11-15T06:00:00+01:00")], "e_tag": ["e"],
                          "storage_class": ["GLACIER"], "is_latest": [True]})
    con = duckdb.connect()
    con.from_df(frame).write_parquet(str(path))
    con.close()
    parsed = parse_inventory(path)
    assert parsed.rejections == [] and parsed.rows_in == 1
    row = parsed.rows[0]
    assert row["object_key"] == "raw/a b.bin"                     # Parquet keys are not URL-encoded
    assert row["size_bytes"] == 3 * GIB and row["etag"] == "e"
    assert row["last_modified_at"] == datetime(2026, 11, 15, 5, 0)  # converted to UTC
    assert row["inventory_at"] == NOV_30


@pytest.mark.parametrize(("name", "content", "manifest", "rule"), [
    ("inventory.csv", "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass\nb,k,1,2026-11-01T00:00:00Z,e,S\n",
     None, "inventory_date"),
    ("inv_2026-11-31.csv", "Bucket,Key,Size,LastModifiedDate,ETag,StorageClass\n", None, "inventory_date"),
    ("inv_2026-11-30.csv", ROWS, None, "inventory_schema"),
    ("inv_2026-11-30.csv", "Bucket,Key,ETag\nb,k,e\n", None, "csv_header"),
    ("inv-1.csv", ROWS, {"created_ms": "yesterday"}, "inventory_manifest"),
    ("inv-1.csv", ROWS, {"schema": "Bucket, Key, ETag"}, "inventory_manifest"),
    ("inv-1.csv.gz", ROWS, {}, "file_compression"),
    ("inv_2026-11-30.parquet", "not parquet", None, "file_format"),
])
def test_bad_files_are_quarantined_whole_with_a_rule(tmp_path, name, content, manifest, rule):
    if manifest is not None:
        _manifest(tmp_path, [name], **manifest)
    (tmp_path / name).write_text(content, encoding="utf-8")
    parsed = parse_inventory(tmp_path / name)
    assert parsed.rows == [] and parsed.rows_in == 1
    assert [(r.line, r.rule) for r in parsed.rejections] == [(0, rule)]


def test_a_broken_manifest_beside_a_headerless_file_is_named(tmp_path):
    (tmp_path / "manifest.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "inv-1.csv").write_text(ROWS, encoding="utf-8")
    assert [r.rule for r in parse_inventory(tmp_path / "inv-1.csv").rejections] == ["inventory_manifest"]


def test_parquet_without_required_fields_is_quarantined(tmp_path):
    path = tmp_path / "inv_2026-11-30.parquet"
    con = duckdb.connect()
    con.from_df(pd.DataFrame({"bucket": ["b"], "key": ["k"]})).write_parquet(str(path))
    con.close()
    parsed = parse_inventory(path)
    assert [(r.line, r.rule) for r in parsed.rejections] == [(0, "parquet_schema")] and parsed.rows_in == 1


# --- assets into a temporary DuckDB ------------------------------------------------------------------------------

def _materialize(landing: Path, warehouse: Path, *names: str) -> dg.ExecuteInProcessResult:
    return dg.materialize([ASSETS[n] for n in names], instance=dg.DagsterInstance.ephemeral(),
                          resources={"landing": LandingZone(path=str(landing)),
                                     "warehouse": Warehouse(path=str(warehouse))})


def _query(warehouse: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


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
        "ml-prod,logs/,log,,,-1\n", encoding="utf-8")
    (storage / "storage_prices.csv").write_text(
        "storage_class,price_per_gb_month\nSTANDARD,0.023\nGLACIER,cheap\nSTANDARD,0.024\n", encoding="utf-8")
    result = _materialize(landing, warehouse, "storage_inventory", "storage_prefix_rules", "storage_prices")
    assert result.success

    ledger = _query(warehouse, "select source, source_file, rows_in, rows_staged, rows_quarantined "
                               "from raw.ingested_files where source like 'storage%' order by 1, 2")
    assert ledger == [
        ("storage_inventory", "storage/ml-prod/2026-11-30T00-00Z/d1.csv.gz", 2, 1, 1),
        ("storage_inventory", "storage/undated.csv", 1, 0, 1),
        ("storage_prefix_rules", "storage/prefix_rules.csv", 3, 1, 2),
        ("storage_prices", "storage/storage_prices.csv", 3, 1, 2),
    ]
    quarantined = _query(warehouse, "select source_file, line, rule from raw.quarantine "
                                    "where source like 'storage%' order by 1, 2")
    assert quarantined == [
        ("storage/ml-prod/2026-11-30T00-00Z/d1.csv.gz", 2, "size_bytes.coerce_dtype"),
        ("storage/prefix_rules.csv", 3, "purpose.isin"),
        ("storage/prefix_rules.csv", 4, "retention_days.greater_than_or_equal_to"),
        ("storage/storage_prices.csv", 3, "price_per_gb_month.str_matches"),
        ("storage/storage_prices.csv", 4, "storage_class.unique"),
        ("storage/undated.csv", 0, "inventory_date"),
    ]
    assert _query(warehouse, "select bucket, object_key, size_bytes, inventory_at from raw.storage_inventory") == [
        ("ml-prod", "raw/b7/a b c.bin", GIB, NOV_30)]
    assert _query(warehouse, "select storage_class, price_per_gb_month from raw.storage_prices") == [
        ("STANDARD", Decimal("0.023000"))]


# --- the demo, end to end, against hand-computed figures ---------------------------------------------------------

def _cost(gib: int, price: str, held_days: int) -> Fraction:
    """GiB x price per GB-month x held days / 30 (November), exact."""
    return gib * Fraction(price) * Fraction(held_days, 30)


def _rounded(value: Fraction, places: str = "0.01") -> Decimal:
    """An exact fraction rounded half-up once (to the cent unless told)."""
    whole = Decimal(value.numerator) / Decimal(value.denominator)   # 28 significant digits: ample here
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
    ("ml-archive", "raw/b8/shard-000.parquet"): ("B-8", "backup", 1500, GLACIER, 15),
    ("ml-archive", "tmp/unpriced.bin"): ("unattributed", None, 10, None, 29),
}


def test_demo_storage_cost_per_object(demo_run):
    assert demo_run.succeeded
    rows = demo_run.query("select bucket, object_key, batch_id, purpose, size_bytes, storage_cost, is_unpriced, "
                          "month_start from intermediate.int_storage_objects_costed")
    got = {(b, k): (batch, purpose, size, cost, unpriced, month)
           for b, k, batch, purpose, size, cost, unpriced, month in rows}
    # The earlier inventory of the month (2026-11-23, scratch/old-dump.bin) is superseded by the 30th's.
    assert set(got) == set(DEMO_OBJECTS)
    for place, (batch, purpose, gib, price, days) in DEMO_OBJECTS.items():
        cost = _rounded(Fraction(0) if price is None else _cost(gib, price, days), "0.000001")
        assert got[place] == (batch, purpose, gib * GIB, cost, price is None,
                              datetime(2026, 11, 1).date()), place
    # 3000 GiB x 0.023 x 29/30 = 66.70; by hand, for the reader:
    assert got[("ml-prod", "raw/b7/part-0000.parquet")][3] == Decimal("66.700000")


def test_demo_storage_cost_per_batch(demo_run):
    rows = demo_run.query("select batch_id, cast(round(sum(storage_cost), 2) as decimal(18, 2)) "
                          "from intermediate.int_storage_objects_costed group by batch_id")
    expected: dict[str, Fraction] = {}
    for batch, _, gib, price, days in DEMO_OBJECTS.values():
        expected[batch] = expected.get(batch, Fraction(0)) + (0 if price is None else _cost(gib, price, days))
    assert dict(rows) == {batch: _rounded(total) for batch, total in expected.items()}
    # 66.70 + 9.20 + 6.44 + 0.80 + 0.25 + 6.67; 33.35 + 4.60 + 0.69 + 3.00; 13.34 + 0.00 (unpriced)
    assert dict(rows) == {"B-7": Decimal("90.06"), "B-8": Decimal("41.64"), "unattributed": Decimal("13.34")}


def test_demo_storage_governance_rows(demo_run):
    rows = demo_run.query("select finding, bucket, object_key, batch_id, owner, purpose, retention_days, "
                          "duplicate_count, duplicate_of, monthly_cost, is_unpriced "
                          "from marts.fct_storage_governance order by finding, bucket, object_key")
    assert rows == [
        ("duplicate", "ml-archive", "raw/b8/shard-000.parquet", "B-8", "platform-team", "backup", 365, 2,
         "s3://ml-prod/raw/b8/shard-000.parquet", Decimal("3.00"), False),
        ("duplicate", "ml-prod", "backup/b7/step-2000.ckpt", "B-7", "platform-team", "backup", 365, 2,
         "s3://ml-prod/checkpoints/b7/step-2000.ckpt", Decimal("0.80"), False),
        ("duplicate", "ml-prod", "checkpoints/b7/step-2000.ckpt", "B-7", "training-team", "checkpoint", 90, 2,
         "s3://ml-prod/backup/b7/step-2000.ckpt", Decimal("6.44"), False),
        ("duplicate", "ml-prod", "raw/b8/shard-000.parquet", "B-8", "data-team", "raw", 365, 2,
         "s3://ml-archive/raw/b8/shard-000.parquet", Decimal("33.35"), False),
        ("no_owner_or_purpose", "ml-archive", "tmp/unpriced.bin", "unattributed", None, None, None, 1, None,
         Decimal("0.00"), True),
        ("no_owner_or_purpose", "ml-prod", "scratch/tmp-dump.bin", "unattributed", None, None, None, 1, None,
         Decimal("13.34"), False),
        # The rule's 30 days: written 2026-09-30, kept until 2026-10-30, still there on 2026-11-30.
        ("past_retention", "ml-prod", "logs/b7/train.log", "B-7", "platform-team", "log", 30, 1, None,
         Decimal("6.67"), False),
    ]


def test_demo_storage_sources_conserved(demo_run):
    rows = demo_run.query("select source, sum(rows_in), sum(rows_staged), sum(rows_quarantined) "
                          "from raw.ingested_files where source like 'storage%' group by source order by source")
    assert rows == [("storage_inventory", 13, 13, 0), ("storage_prefix_rules", 10, 10, 0),
                    ("storage_prices", 3, 3, 0)]
