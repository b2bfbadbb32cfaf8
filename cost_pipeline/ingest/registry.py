"""Every landing source, collected from the source-system modules, and the one way to load any of them.

Each system module declares its sources (``SOURCES``); this module only gathers them, in the order the docs list
them. ``render_inputs`` renders the inputs table of ``docs/inputs.md`` from the declarations
(``cost-pipeline docs`` writes it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from cost_pipeline.contract import Contract, load_contract
from cost_pipeline.contract.schemas import Domain, NotBefore
from cost_pipeline.ingest import (
    batches,
    billing,
    contract_tables,
    finance,
    scheduler,
    serving,
    storage,
    telemetry,
    timesheets,
    training,
)
from cost_pipeline.ingest.lib.source import RowLoader, Source
from cost_pipeline.ingest.lib.warehouse import BOOKKEEPING_TABLES, IngestReport
from cost_pipeline.ingest.request_lines import RequestLoader
from cost_pipeline.markdown import table

SYSTEMS = (batches, scheduler, telemetry, training, finance, billing, timesheets, serving, storage)


def _collect() -> dict[str, Source]:
    collected: dict[str, Source] = {}
    for system in SYSTEMS:
        for source in system.SOURCES:
            if source.name in collected:
                raise ValueError(f"source {source.name} is declared twice")
            collected[source.name] = source
    return collected


SOURCES: dict[str, Source] = _collect()


def sources() -> dict[str, Source]:
    """Every landing source by raw table name, small and large."""
    return dict(SOURCES)


def raw_tables() -> dict[str, str]:
    """Every raw table with its description: the contract tables, the landing sources (each followed by its extent
    table, if it declares one), then the bookkeeping."""
    sourced: dict[str, str] = {}
    for name, source in SOURCES.items():
        sourced[name] = source.summary()
        if source.extent_table is not None:
            sourced[source.extent_table] = source.extent_summary()
    return {**contract_tables.TABLES, **sourced, **BOOKKEEPING_TABLES}


def load_source(
    con: duckdb.DuckDBPyConnection, landing_dir: Path, source: Source, contract: Contract, options: Any = None
) -> IngestReport:
    """Replace one source's raw table from its files, on its own path (pandas or in DuckDB)."""
    return source.load(con, landing_dir, contract, options)


def load_named(
    con: duckdb.DuckDBPyConnection, landing_dir: Path, name: str, contract: Contract, options: Any = None
) -> IngestReport:
    """Load one source by its raw table name (with its default options unless given)."""
    return load_source(con, landing_dir, SOURCES[name], contract, options)


def unread_files(landing_dir: Path) -> list[Path]:
    """Every file under the landing folder that no source reads (no pattern or companion of any source matches)."""
    claimed = {path for source in SOURCES.values() for path in source.claims(landing_dir)}
    return sorted(p for p in landing_dir.rglob("*") if p.is_file() and p not in claimed)


def render_inputs() -> str:
    """The markdown table of every landing source, one row each, from the registry."""
    headings = ["folder", "files", "formats", "input", "raw table", "loader", "options", "what the files hold"]
    rows = (
        [
            f"`{source.folder}/`",
            ", ".join(f"`{p}`" for p in source.patterns),
            ", ".join(source.formats()),
            ", ".join(source.requirements),
            f"`raw.{source.name}`",
            source.loader.kind,
            ", ".join(f"`{o}`" for o in source.option_names()),
            source.description,
        ]
        for source in SOURCES.values()
    )
    return "\n".join(table(headings, rows)) + "\n"


def _checked_values(source: Source, contract: Contract) -> tuple[dict[str, tuple[str, Domain]], list[tuple[str, str]]]:
    """A source's numeric domains (column -> warehouse type, domain) and its cross-field rules (rule, expectation),
    sums across a file's rows (``SumAtMost``) and spans that must not overlap (``Disjoint``) among them."""
    loader = source.loader
    if isinstance(loader, RowLoader | RequestLoader):
        schema = loader.schema(contract)
        domains = {c.name: (c.sql_type, c.domain) for c in schema.columns if c.domain is not None}
        ordered: list[NotBefore] = list(schema.ordered)
        rows = [(r.rule, r.expects) for r in ordered]
        rows += [(str(c.name), str(c.description)) for c in schema.row_checks if c.description]
        rows += [(s.rule, s.expects) for s in schema.sums]
        rows += [(d.rule, d.expects) for d in schema.disjoint]
        return domains, rows
    bound = getattr(loader, "bound", None)
    if bound is not None:  # the domains under this contract (a GPU's power bound is a contract value)
        loader = bound(loader, contract, Path())
    types = dict(getattr(loader, "columns", ()))
    return {name: (types.get(name, ""), d) for name, d in getattr(loader, "domains", {}).items()}, []


def render_domains() -> str:
    """The markdown tables of every numeric column's domain and every cross-field rule, from the declarations."""
    contract = load_contract()
    domain_rows, rule_rows = [], []
    for source in SOURCES.values():
        domains, rules = _checked_values(source, contract)
        for column, (sql_type, domain) in domains.items():
            domain_rows.append(
                [
                    f"`raw.{source.name}`",
                    f"`{column}`",
                    sql_type,
                    domain.describe(),
                    ", ".join(f"`{column}.{rule}`" for rule in domain.rules()),
                ]
            )
        rule_rows += [[f"`raw.{source.name}`", f"`{rule}`", expects] for rule, expects in rules]
    lines = ["#### Numeric domains", "", *table(["raw table", "column", "type", "domain", "rules"], domain_rows)]
    lines += ["", "#### Cross-field rules", "", *table(["raw table", "rule", "the row should have"], rule_rows)]
    return "\n".join(lines) + "\n"
