"""What a landing source is: its raw table, files, loader, contract schema, options and description, declared once.

Each source-system module (``scheduler.py``, ``billing.py``, ``storage.py``...) declares its sources as ``Source``
values; ``registry.py`` collects them. The Dagster ingest assets with their descriptions, checks and run config, the
dbt source descriptions and the inputs table in ``docs/inputs.md`` all come from these declarations.

Two loaders exist. ``RowLoader`` is the pandas path for the small sources: each file is parsed in Python into
numbered rows and checked by pandera against the source's contract schema. The large sources (device samples,
S3 Inventory) load inside DuckDB (``in_database.InDatabaseSource``), and so do inference requests
(``request_lines.RequestLoader``, which checks the few lines SQL cannot vouch for with pandera).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import duckdb

from cost_pipeline.contract import Contract
from cost_pipeline.contract.schemas import SourceSchema
from cost_pipeline.ingest.lib.parquet import parse_parquet
from cost_pipeline.ingest.lib.records import (
    ParsedFile,
    csv_line_parser,
    file_sha256,
    jsonl_line_parser,
    landing_files,
    naming_file,
    parse_file,
    refusal,
    refused_file,
)
from cost_pipeline.ingest.lib.reuse import (
    FileStat,
    LoadedFile,
    count_reused,
    remember_loaded,
    reusable_files,
    row_loader_sha256,
)
from cost_pipeline.ingest.lib.validate import validate_files
from cost_pipeline.ingest.lib.warehouse import (
    FirstSeen,
    IngestReport,
    extent_table,
    retracted_contents,
    retracted_files,
    write_validated_source,
)

LineParser = Callable[[list[str], ParsedFile], None]
RowMap = Callable[[dict[str, object]], dict[str, object]]
# A file's format by how its name ends; a source whose files are named otherwise says what they hold (text_format).
FORMATS = {".csv.gz": "CSV (gzip)", ".csv": "CSV", ".parquet": "Parquet", ".jsonl": "JSON Lines", ".json": "JSON"}


class Loader(Protocol):
    kind: ClassVar[str]  # how the docs name the path: "pandas + pandera" or "in DuckDB"

    def reads_parquet(self) -> bool: ...

    def load(
        self, con: duckdb.DuckDBPyConnection, landing_dir: Path, source: Source, contract: Contract, options: Any
    ) -> IngestReport: ...


@dataclass(frozen=True)
class RowLoader:
    """The pandas path: each file parsed into numbered rows in Python, then checked by pandera.

    ``parser`` builds the line parser from the contract schema and the source's options; ``parquet_row`` (set
    when the source accepts Parquet) builds the mapping of one Parquet row into the raw shape from the options.
    """

    schema: Callable[[Contract], SourceSchema]
    parser: Callable[[SourceSchema, Any], LineParser]
    parquet_row: Callable[[Any], RowMap] | None = None
    # Raw columns a file's rows take from beside the file, the same for every row: FOCUS's export run, from the
    # manifest listing the file. Given the landing folder once a load, it returns the function of a landing path ->
    # its values (what it reads beside the files, it reads once a load). A file whose values changed is read again.
    file_columns: Callable[[Path], Callable[[Path], dict[str, object]]] | None = None
    kind: ClassVar[str] = "pandas + pandera"

    def reads_parquet(self) -> bool:
        return self.parquet_row is not None

    def load(
        self, con: duckdb.DuckDBPyConnection, landing_dir: Path, source: Source, contract: Contract, options: Any
    ) -> IngestReport:
        """Parse, validate and write every new file of the source; the night goes on whatever one file holds.

        A file this loader (same code, contract, raw columns and options) loaded before with the same bytes is not
        read again (nor hashed, while its ``os.stat`` is what it was then): its rows, lines and ledger row stay
        (``reuse``), unless an earlier file tonight has its bytes (it is then that file's duplicate) or a
        retraction took its bytes out."""
        schema = self.schema(contract)
        parser = self.parser(schema, options)
        columns = [(c.name, c.sql_type) for c in schema.columns]
        loader = row_loader_sha256(source.name, columns, options, contract)
        reusable = reusable_files(con, source.name, columns)
        retracted, copies = retracted_files(con, source.name), retracted_contents(con, source.name)
        seen = FirstSeen()  # as write_validated_source will see the files: a reused file must be no duplicate
        parsed_files: list[ParsedFile] = []
        reused: dict[str, str] = {}  # file -> sha256, not read tonight
        hashed: dict[str, LoadedFile] = {}  # each file's sha256 tonight, its stat before it was read, its loader
        identities: dict[str, str] = {}  # file -> what its rows take from beside it, when anything
        stamp = self.file_columns(landing_dir) if self.file_columns is not None else None
        for path in source.files(landing_dir):
            source_file = path.relative_to(landing_dir).as_posix()
            with naming_file(source_file):
                reason = refusal(path, landing_dir)
                if reason is not None:
                    parsed_files.append(refused_file(path, reason))
                    continue
                stat = FileStat.of(path)
                known = reusable.get(source_file)
                stamped = stamp(path) if stamp is not None else {}
                # the same bytes with other values beside them (a FOCUS part repeated by a later run) are no duplicate
                identity = json.dumps(stamped, sort_keys=True, default=str) if any(stamped.values()) else None
                if identity is not None:
                    identities[source_file] = identity
                if known is not None and known.loader == loader and known.sha256 not in copies:
                    # the ledger's sha256 while the stat is the same; else hashed, and read if the bytes changed
                    sha = known.sha256 if known.stat == stat else file_sha256(path)
                    if (
                        sha == known.sha256
                        and _stamped_as(con, source.name, source_file, stamped)
                        and seen.original_of(source_file, _keyed(sha, identity)) is None
                    ):
                        reused[source_file] = sha
                        hashed[source_file] = LoadedFile(sha, stat.settled(), loader)
                        continue
                if path.suffix == ".parquet" and self.parquet_row is not None:
                    parsed = parse_parquet(path, self.parquet_row(options))
                else:
                    parsed = parse_file(path, parser)
                for row in parsed.rows:
                    row.update(stamped)
                parsed_files.append(parsed)
                # its bytes are read: settled now
                hashed[source_file] = LoadedFile(parsed.sha256, stat.settled(), loader)
                if (source_file, parsed.sha256) not in retracted and parsed.sha256 not in copies:
                    seen.original_of(source_file, _keyed(parsed.sha256, identity))
        valid = validate_files(parsed_files, schema, con)

        def keep_reused(report: IngestReport) -> None:
            count_reused(con, source.name, list(reused), report)
            remember_loaded(con, source.name, hashed)

        return write_validated_source(
            con,
            schema,
            landing_dir,
            list(zip(parsed_files, valid, strict=True)),
            reused,
            keep_reused,
            extent=source.extent,
            identities=identities,
        )


def _keyed(sha256: str, identity: str | None) -> str:
    """A file's key among the files of one load: its bytes, and what its rows take from beside it (if anything)."""
    return sha256 if identity is None else f"{sha256} {identity}"


def _stamped_as(con: duckdb.DuckDBPyConnection, name: str, source_file: str, stamped: dict[str, object]) -> bool:
    """Whether the rows raw keeps of ``source_file`` hold the ``stamped`` values (a file with no rows kept does)."""
    if not stamped:
        return True
    columns = list(stamped)
    try:
        kept = con.execute(
            f"select distinct {', '.join(columns)} from raw.{name} where source_file = ?", [source_file]
        ).fetchall()
    except duckdb.Error:  # a raw table written before these columns were kept: its rows hold none of them
        return not any(stamped.values())
    return all(tuple(row) == tuple(stamped[c] for c in columns) for row in kept)


def csv_columns(schema: SourceSchema, _options: Any = None) -> LineParser:
    """A CSV in the documented shape, whose header must name every column the contract declares, those whose values
    may be blank too: a file without one is refused whole (``csv_header``). Read as blank in every row, a missing
    column said something of each: a replica list without ``gpu_hour_price`` made rented replicas owned, a registry
    without the plan columns wiped every budget, and the newest file won."""
    return csv_line_parser(c.name for c in schema.columns)


def jsonl_columns(schema: SourceSchema, _options: Any = None) -> LineParser:
    """JSON Lines, one object a line, read by the schema's column names."""
    return jsonl_line_parser(c.name for c in schema.columns)


def batch_lineage(relation: str, batch: str = "batch_id", joined: str = "") -> str:
    """The select a ``Source.batch_lineage`` holds: each row's landing file and batch in ``relation`` (schema.name,
    as the night built it), the batch read as ``batch`` after ``joined`` (a join that names it)."""
    return f"select lineage.source_file, {batch} as batch_id from {relation} as lineage {joined}".strip()


@dataclass(frozen=True)
class Source:
    """One landing source, declared once."""

    name: str  # the raw table, and the ingest asset's key ["raw", name]
    requirements: tuple[str, ...]  # the DOMAIN input (I1..I10) first, then any requirement (R..) it serves
    folder: str  # the landing sub-folder
    patterns: tuple[str, ...]  # glob patterns under the folder
    description: str  # one line: what the files hold
    loader: Loader
    options: type | None = None  # a frozen dataclass of launch options (the asset's run config); None: none
    exclude: tuple[str, ...] = ()  # file names the patterns match that belong to another source
    text_format: str | None = None  # what a file holds when its name does not say (``*.txt``)
    # Files the source reads beside its own (an S3 Inventory's manifest.json): not rows, but not ignored either.
    companions: tuple[str, ...] = ()
    # Which batches a file's rows fed, in last night's relations: a select of (source_file, batch_id)
    # (``batch_lineage``), the batch as attributed (an unregistered label is not a batch). None: not known per
    # batch (prices and ledgers; scheduler and step records, whose label attribution may change): a retracted file
    # may move every batch.
    batch_lineage: str | None = None
    # A row that passes the contract and fails a staging dbt test may be quarantined alone and the night built without
    # it (cost_pipeline.dbt_failures): it is then left out as if the contract had quarantined it at ingest. True only
    # where leaving a row out changes no figure but its own batch's, and the shares other rows take of a pool (a
    # request's share of a model-month's spend, a sample's interval taken by the sample before it, a job's share of
    # owned capacity). So a training step (its own batch's step figures, and its job's setup, hang and discarded time,
    # read from the job's steps: the job's batch, the same unless the step's label disagrees with its job's), a
    # batch's trial round (its batch's rounds and stop signal) and an external-service invoice (its batch's services
    # cost and its month's cash book and journal; every line of the invoice is held, its accrual with a failing
    # billed line, where a quarantine at ingest would have let the accrual count). False for registers, prices,
    # ledgers, rules, jobs, replicas and cloud bills, through which other rows are read, priced or classified (a FOCUS
    # line makes the job it names cloud-billed, whatever batch the line is tagged with, and prices every batch's cloud
    # what-if; a task outcome classifies its requests; a sacct record attributes its job's samples and steps), and for
    # inventories, whose later models keep an object's latest listing.
    rows_stand_alone: bool = False
    # Raw columns whose values each file says of every row it holds, valid or not, recorded in raw.<name>_extent
    # (``extent_table``, with file and line) and kept while the file's rows are: what the file covers. A staging model
    # that lets a newer file replace what an older one says inside what the newer covers reads it there, not from
    # raw, which lacks the rows quarantined at ingest or held after a dbt test (a Harvest export covers its first to
    # last date x its people, projects and tasks). Read on the pandas path (``RowLoader``) only.
    extent: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.formats()  # every pattern has a known format
        if self.extent and not isinstance(self.loader, RowLoader):
            raise ValueError(f"{self.name}: an extent is recorded on the pandas path (RowLoader) only")

    @property
    def extent_table(self) -> str | None:
        """The raw table of the source's extent, if it declares one."""
        return extent_table(self.name) if self.extent else None

    def extent_summary(self) -> str:
        """The one-line description of the extent table: the asset spec's, and the dbt source's."""
        listed = ", ".join(self.extent[:-1]) + f" and {self.extent[-1]}" if len(self.extent) > 1 else self.extent[0]
        return (
            f"What each file of raw.{self.name} covers, from every row it holds (those quarantined at ingest or held "
            f"after a dbt test too), by {listed}; null where a value is not its column's type."
        )

    def files(self, landing_dir: Path) -> list[Path]:
        """The source's files in sorted order."""
        return landing_files(landing_dir, self.folder, self.patterns, exclude=self.exclude)

    def claims(self, landing_dir: Path) -> set[Path]:
        """Every file the source reads: its own and its companions."""
        return {*self.files(landing_dir), *landing_files(landing_dir, self.folder, self.companions)}

    def formats(self) -> tuple[str, ...]:
        """The formats the patterns admit, in pattern order."""
        found: list[str] = []
        for pattern in self.patterns:
            known = next((f for end, f in FORMATS.items() if pattern.endswith(end)), self.text_format)
            if known is None:
                raise ValueError(f"{self.name}: pattern {pattern} names no known format and no text_format is set")
            if known not in found:
                found.append(known)
        return tuple(found)

    def files_text(self) -> str:
        """``registry/batches*.csv``; ``scheduler/*.sacct, *.txt or *.psv``."""
        names = list(self.patterns)
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        return f"{self.folder}/{listed}"

    def summary(self) -> str:
        """The one-line description of the raw table: the asset's, and the dbt source's."""
        where = "; loaded and checked inside DuckDB" if self.loader.kind == "in DuckDB" else ""
        return f"{self.description} ({', '.join(self.requirements)}), from {self.files_text()}{where}."

    def default_options(self) -> Any:
        return None if self.options is None else self.options()

    def option_names(self) -> tuple[str, ...]:
        return () if self.options is None else tuple(f.name for f in dataclasses.fields(self.options))

    def load(
        self, con: duckdb.DuckDBPyConnection, landing_dir: Path, contract: Contract, options: Any = None
    ) -> IngestReport:
        """Replace ``raw.<name>`` from the source's files (with the default options unless given)."""
        return self.loader.load(
            con, landing_dir, self, contract, self.default_options() if options is None else options
        )
