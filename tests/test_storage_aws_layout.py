"""S3 Inventory in the layout AWS delivers and ``aws s3 sync`` copies, and an inventory without StorageClass (I6).

No real inventory of someone else's bucket is published with its data files, so the files here are built from
AWS's documentation of the inventory location and manifest. (Searched again for issue 14: public repositories hold
only manifest.json excerpts quoted in READMEs - AWS's own example, a nix-cache inventory manifest whose Parquet data
files are 58-176 MB objects in S3, never in a repository - and no manifest with the data file it lists.) The
layout (docs.aws.amazon.com/AmazonS3/latest/userguide/storage-inventory-location.html):

    destination-prefix/source-bucket/config-ID/YYYY-MM-DDTHH-MMZ/manifest.json
    destination-prefix/source-bucket/config-ID/YYYY-MM-DDTHH-MMZ/manifest.checksum
    destination-prefix/source-bucket/config-ID/hive/dt=YYYY-MM-DD-HH-MM/symlink.txt
    destination-prefix/source-bucket/config-ID/data/example-file-name.csv.gz

with the manifest's ``files[].key`` the data file's key in the destination bucket, and its ``fileSchema`` the
fields the inventory was configured with (StorageClass is optional in the inventory configuration).
"""

from __future__ import annotations

import copy
import gzip
import json
import os
from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from cost_pipeline.contract import Contract, load_contract
from cost_pipeline.ingest.lib.warehouse import IngestReport, connect
from cost_pipeline.ingest.storage import load_storage_inventory
from tests.helpers import cli_night, one_batch_landing, query
from tests.test_storage import GIB, _rounded

SCHEMA = (
    "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag, StorageClass, "
    "IsMultipartUploaded, ReplicationStatus, EncryptionStatus"
)
# Two daily deliveries of one inventory configuration; one data file each (AWS names them by a UUID).
DAYS = {
    "2026-11-29T01-00Z": (
        "1795914000000",
        "7d1c2a40-1e5b-4f7e-9a53-0c2b9f4e8d11.csv.gz",
        [
            ("raw/b7/a%20b.bin", "", "false", "false", "1073741824", "2026-10-15T00:00:00.000Z", "e1", "STANDARD"),
            ("ckpt/b7/step-100.pt", "", "true", "false", "524288000", "2026-11-01T12:00:00.000Z", "e2", "STANDARD_IA"),
        ],
    ),
    "2026-11-30T01-00Z": (
        "1796000400000",
        "b2f0e9c8-5a4d-4c3b-8e21-6f7a9d0c1b22.csv.gz",
        [
            ("raw/b7/a%20b.bin", "", "false", "false", "1073741824", "2026-10-15T00:00:00.000Z", "e1", "STANDARD"),
            ("logs/b7/run.log", "", "true", "false", "not-a-size", "2026-11-29T00:00:00.000Z", "e3", "STANDARD"),
        ],
    ),
}


def _gzip_csv(rows: list[list[str]]) -> bytes:
    """Header-less CSV lines, every field quoted, gzipped as AWS delivers them."""
    lines = [",".join(f'"{f}"' for f in fields) for fields in rows]
    # mtime=0: gzip stamps the current second into its header, and the two layouts' files must be the same bytes.
    return gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0)


def _data(rows: list[tuple[str, ...]], with_class: bool = True) -> bytes:
    lines = []
    for key, version, latest, marker, size, modified, etag, storage_class in rows:
        fields = ["ml-prod", key, version, latest, marker, size, modified, etag]
        fields += [storage_class] if with_class else []
        fields += ["false", "COMPLETED", "SSE-S3"]
        lines.append(fields)
    return _gzip_csv(lines)


def _manifest(created_ms: str, keys: list[str], schema: str = SCHEMA) -> str:
    return json.dumps(
        {
            "sourceBucket": "ml-prod",
            "destinationBucket": "arn:aws:s3:::ml-inventory",
            "version": "2016-11-30",
            "creationTimestamp": created_ms,
            "fileFormat": "CSV",
            "fileSchema": schema,
            "files": [{"key": k, "size": 1, "MD5checksum": "0" * 32} for k in keys],
        },
        indent=2,
    )


def _aws_layout(storage: Path, local_prefix: str, schema: str = SCHEMA, with_class: bool = True) -> None:
    """As ``aws s3 sync s3://ml-inventory/<prefix> storage/<local_prefix>`` copies the destination bucket."""
    config = storage / local_prefix / "ml-prod" / "daily-all-objects"
    for dated, (created_ms, name, rows) in DAYS.items():
        (config / dated).mkdir(parents=True, exist_ok=True)
        (config / "data").mkdir(exist_ok=True)
        (config / "data" / name).write_bytes(_data(rows, with_class))
        key = f"inventories/ml-prod/daily-all-objects/data/{name}"  # relative to the destination bucket
        (config / dated / "manifest.json").write_text(_manifest(created_ms, [key], schema), encoding="utf-8")
        (config / dated / "manifest.checksum").write_text("0" * 32 + "\n", encoding="utf-8")
        hive = config / "hive" / f"dt={dated[:10]}-{dated[11:13]}-00"
        hive.mkdir(parents=True)
        (hive / "symlink.txt").write_text(f"s3://ml-inventory/{key}\n", encoding="utf-8")


def _flat_layout(storage: Path) -> None:
    """Each day's manifest beside its data file, as the loader has always read them."""
    for dated, (created_ms, name, rows) in DAYS.items():
        (storage / dated).mkdir(parents=True)
        (storage / dated / name).write_bytes(_data(rows))
        key = f"inventories/ml-prod/daily-all-objects/data/{name}"
        (storage / dated / "manifest.json").write_text(_manifest(created_ms, [key]), encoding="utf-8")


def _load(landing: Path, contract: Contract | None = None) -> tuple[IngestReport, list[tuple], list[tuple]]:
    con = connect(landing.parent / "w.duckdb", readable_dir=landing)
    try:
        report = load_storage_inventory(con, landing, contract)
        rows = con.execute(
            "select * exclude (source_file) from raw.storage_inventory order by inventory_at, source_line"
        ).fetchall()
        quarantined = con.execute("select source_file, line, rule from raw.quarantine order by 1, 2").fetchall()
    finally:
        con.close()
    return report, rows, quarantined


def _storage(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name / "landing" / "storage"
    folder.mkdir(parents=True)
    return folder


@pytest.mark.parametrize("local_prefix", ["inventories", "", "copied/elsewhere"])
def test_an_inventory_as_aws_delivers_it_loads_like_the_flat_layout(tmp_path, local_prefix):
    aws, flat = _storage(tmp_path, "aws"), _storage(tmp_path, "flat")
    _aws_layout(aws, local_prefix)
    _flat_layout(flat)
    report, rows, quarantined = _load(aws.parent)
    flat_report, flat_rows, flat_quarantined = _load(flat.parent)
    assert rows == flat_rows and len(rows) == 3
    assert report.files == flat_report.files == 2 and report.rows_in == 4 and report.rows_staged == 3
    assert [(line, rule) for _, line, rule in quarantined] == [(line, rule) for _, line, rule in flat_quarantined]
    assert [rule for *_, rule in quarantined] == ["size_bytes.non_negative"]
    data = "/".join(p for p in (local_prefix, "ml-prod/daily-all-objects/data") if p)
    assert quarantined[0][0] == f"storage/{data}/{DAYS['2026-11-30T01-00Z'][1]}"
    assert report.flags == []
    # Each day's rows carry that day's manifest date, not a date guessed from a folder name.
    assert sorted({row[7] for row in rows}) == [datetime(2026, 11, 29, 1, 0), datetime(2026, 11, 30, 1, 0)]


def test_a_data_file_no_manifest_lists_is_not_taken_for_a_listed_one(tmp_path):
    storage = _storage(tmp_path, "aws")
    _aws_layout(storage, "inventories")
    stray = storage / "inventories" / "ml-prod" / "daily-all-objects" / "data" / "not-listed.csv.gz"
    stray.write_bytes(_data(DAYS["2026-11-30T01-00Z"][2]))
    report, _, quarantined = _load(storage.parent)
    assert (
        "storage/inventories/ml-prod/daily-all-objects/data/not-listed.csv.gz",
        0,
        "inventory_schema",
    ) in quarantined
    assert report.rows_staged == 3


def test_an_inventory_configured_without_storage_class_is_priced_at_the_default_class_and_flagged(tmp_path):
    storage = _storage(tmp_path, "aws")
    _aws_layout(storage, "inventories", schema=SCHEMA.replace(" StorageClass,", ""), with_class=False)
    (storage / "ml-archive_2026-11-30.csv").write_text(
        "Bucket,Key,Size,LastModifiedDate\nml-archive,old/x.bin,10,2026-01-01T00:00:00Z\n", encoding="utf-8"
    )
    contract = load_contract()
    assert contract.storage_default_class == "STANDARD"
    report, rows, quarantined = _load(storage.parent, contract)
    assert [rule for *_, rule in quarantined] == ["size_bytes.non_negative"]  # the one bad size, as before
    assert len(rows) == 4 and {row[6] for row in rows} == {"STANDARD"}
    assert len(report.flags) == 3
    assert all("no StorageClass field" in flag and "storage_default_class" in flag for flag in report.flags)
    assert sorted(flag.split(":")[0] for flag in report.flags) == sorted(
        [f"storage/inventories/ml-prod/daily-all-objects/data/{name}" for _, name, _ in DAYS.values()]
        + ["storage/ml-archive_2026-11-30.csv"]
    )


def test_without_a_default_class_in_the_contract_such_an_inventory_is_rejected_whole(tmp_path):
    storage = _storage(tmp_path, "aws")
    _aws_layout(storage, "inventories", schema=SCHEMA.replace(" StorageClass,", ""), with_class=False)
    document = copy.deepcopy(load_contract().document)
    del document["storage_default_class"]
    report, rows, quarantined = _load(storage.parent, Contract("v1", document))
    assert rows == [] and report.rows_staged == 0
    assert [(line, rule) for _, line, rule in quarantined] == [(0, "inventory_manifest")] * 2


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("link", "is a link that points outside the landing folder"),
        ("fifo", "is not a regular file (a FIFO, socket or device)"),
        ("link_to_a_folder", "is a directory where a file should be"),
    ],
)
def test_a_manifest_is_opened_through_the_one_gate_every_landing_file_passes(tmp_path, kind, reason):
    """A manifest.json that links out of the landing folder (to a manifest listing the file), a FIFO or a link to a
    folder is never read: the data file it would describe is quarantined whole, naming the manifest and why. (A
    folder so named is no manifest at all: tests/test_storage.py.)"""
    storage = _storage(tmp_path, "flat")
    _flat_layout(storage)
    dated = "2026-11-29T01-00Z"
    manifest = storage / dated / "manifest.json"
    outside = tmp_path / "elsewhere" / "manifest.json"
    outside.parent.mkdir()
    outside.write_bytes(manifest.read_bytes())  # a good manifest that lists the file, outside the landing folder
    manifest.unlink()
    (storage / "folder").mkdir()
    make = {
        "link": lambda: manifest.symlink_to(outside),
        "fifo": lambda: os.mkfifo(manifest),
        "link_to_a_folder": lambda: manifest.symlink_to(storage / "folder"),
    }
    make[kind]()
    report, rows, quarantined = _load(storage.parent)
    name = DAYS[dated][1]
    assert (f"storage/{dated}/{name}", 0, "inventory_manifest") in quarantined
    assert {row[7] for row in rows} == {datetime(2026, 11, 30, 1, 0)}  # the other day loads
    assert any(f"storage/{dated}/{name}, line 0: rule inventory_manifest: the manifest storage/{dated}/manifest.json "
               f"{reason}" in example for example in report.examples)  # fmt: skip


# A versioned bucket with two inventory configurations, as AWS writes them: "all-versions"
# (IncludedObjectVersions=All: VersionId, IsLatest, IsDeleteMarker) and "current-only" (Current: no VersionId).
# ckpt/a.bin has a current version (2,000 GiB, written 10 November) and a noncurrent one (1,000 GiB, 1 October);
# ckpt/b.bin one version (600 GiB, 1 October). The current-only inventory lists each key's current version once more.
CURRENT_ONLY_SCHEMA = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass, EncryptionStatus"
A_NOW, A_OLD, B_NOW = (
    "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY",
    "UQ.r3kXhPdfFWQ0jtRTsJZ3gn9nE2tKd",
    "9xVzPb0aTkcbBxt1q0pXyyo9ZbrPj4Wq",
)
VERSIONS = [  # key, version, IsLatest, GiB, LastModifiedDate, ETag
    ("ckpt/a.bin", A_NOW, "true", 2000, "2026-11-10T00:00:00.000Z", "e2"),
    ("ckpt/a.bin", A_OLD, "false", 1000, "2026-10-01T00:00:00.000Z", "e1"),
    ("ckpt/b.bin", B_NOW, "true", 600, "2026-10-01T00:00:00.000Z", "e3"),
]
MIDNIGHT, SIX = "1795996800000", "1796018400000"  # 2026-11-30T00:00Z and 06:00Z


def _versioned_bucket(landing: Path, all_versions_at: str, current_only_at: str) -> None:
    """Both configurations' deliveries of 30 November in the layout AWS delivers, a rule keeping ckpt/ 30 days."""
    storage = landing / "storage"
    (storage / "storage_prices.csv").parent.mkdir(parents=True, exist_ok=True)
    (storage / "storage_prices.csv").write_text("storage_class,price_per_gb_month\nSTANDARD,0.023\n", encoding="utf-8")
    (storage / "prefix_rules.csv").write_text(
        "bucket,prefix,purpose,owner,batch_id,retention_days\nml-prod,ckpt/,checkpoint,training-team,B-1,30\n",
        encoding="utf-8",
    )
    listings = {
        "all-versions": (
            SCHEMA,
            all_versions_at,
            [
                ["ml-prod", key, version, latest, "false", str(gib * GIB), modified, etag, "STANDARD"]
                + ["false", "COMPLETED", "SSE-S3"]
                for key, version, latest, gib, modified, etag in VERSIONS
            ],
        ),
        "current-only": (
            CURRENT_ONLY_SCHEMA,
            current_only_at,
            [
                ["ml-prod", key, str(gib * GIB), modified, etag, "STANDARD", "SSE-S3"]
                for key, _, latest, gib, modified, etag in VERSIONS
                if latest == "true"
            ],
        ),
    }
    for config, (schema, created_ms, rows) in listings.items():
        folder = storage / "inventories" / "ml-prod" / config
        dated = datetime.fromtimestamp(int(created_ms) / 1000, UTC).strftime("%Y-%m-%dT%H-%MZ")
        (folder / dated).mkdir(parents=True)
        (folder / "data").mkdir()
        (folder / "data" / f"{config}.csv.gz").write_bytes(_gzip_csv(rows))
        key = f"inventories/ml-prod/{config}/data/{config}.csv.gz"
        (folder / dated / "manifest.json").write_text(_manifest(created_ms, [key], schema), encoding="utf-8")


@pytest.mark.parametrize(
    ("all_versions_at", "current_only_at", "hours_held"),
    [
        # The current-only inventory six hours later: it is the current versions' last listing; the noncurrent
        # version's is the all-versions one at midnight (and it is still held: a current-only inventory never lists
        # a noncurrent version).
        (MIDNIGHT, SIX, {A_NOW: 20 * 24 + 6, A_OLD: 29 * 24, B_NOW: 29 * 24 + 6}),
        # The all-versions inventory six hours later: every version's last listing.
        (SIX, MIDNIGHT, {A_NOW: 20 * 24 + 6, A_OLD: 29 * 24 + 6, B_NOW: 29 * 24 + 6}),
    ],
    ids=["current-only-later", "all-versions-later"],
)
def test_a_current_version_listed_by_both_configurations_of_a_versioned_bucket_counts_once(
    tmp_path, all_versions_at, current_only_at, hours_held
):
    """The current-only listing of a key is the version the all-versions inventory lists with the same
    LastModifiedDate: one object, from its last listing. Both counted, the current versions' 2,600 GiB were charged
    twice (B-1's storage 110.75 and 110.94 for 66.74 and 66.93), and the listings a later inventory of the other
    configuration did not name (the noncurrent version among them) were taken for deleted."""
    landing = one_batch_landing(tmp_path)
    _versioned_bucket(landing, all_versions_at, current_only_at)
    night = cli_night(landing, tmp_path / "warehouse.duckdb")
    assert night.code == 0, night.out + night.err
    gib = {version: gib for _, version, _, gib, _, _ in VERSIONS}
    # GiB x 0.023 x hours held (from 10 November, or 1 November, to the last listing) / 720 hours of November.
    expected = {v: Fraction(gib[v]) * Fraction("0.023") * Fraction(h, 720) for v, h in hours_held.items()}
    rows = query(
        night.warehouse,
        "select version_id, is_current, storage_cost from intermediate.int_storage_objects_costed order by 1",
    )
    assert rows == sorted((v, True, _rounded(cost, "0.000001")) for v, cost in expected.items())
    # A_NOW 31.05 (2,000 x 0.023 x 486/720), B_NOW 13.455; A_OLD 22.233333 (696 h) or 22.425 (702 h).
    assert expected[A_NOW] == Fraction("31.05") and expected[B_NOW] == Fraction("13.455")
    total = {SIX: Decimal("66.74"), MIDNIGHT: Decimal("66.93")}[current_only_at]
    assert _rounded(sum(expected.values())) == total
    assert query(
        night.warehouse, "select batch_id, storage_cost from marts.fct_batch_costs where batch_id = 'B-1'"
    ) == [("B-1", total)]
    # Both versions written in October are past the rule's 30 days, each listed once.
    assert query(
        night.warehouse,
        "select finding, object_key, version_id, monthly_cost from marts.fct_storage_governance order by 2, 3",
    ) == [
        ("past_retention", "ckpt/a.bin", A_OLD, _rounded(expected[A_OLD])),
        ("past_retention", "ckpt/b.bin", B_NOW, Decimal("13.46")),
    ]
