"""dbt's Jinja compiled once a process, and the prepared project's compiled ahead of its builds
(``cost_pipeline.dbt_templates``; issue 15, the night's fixed cost): a source is compiled once for each make of
environment and renders as before with each template's own globals; a syntax error is still dbt's error; every
macro and every node's SQL of the prepared parse is compiled ahead, so a build forked after compiles none of them."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
from dbt.clients.jinja import get_rendered
from dbt.contracts.graph.manifest import Manifest
from dbt.parser.manifest import extended_mashumuro_decoder
from dbt_common.clients.jinja import get_environment, template_cache
from dbt_common.exceptions import CompilationError

from cost_pipeline.dbt_setup import PARTIAL_PARSE_FILE, manifest_path
from cost_pipeline.dbt_templates import compile_ahead, remember_compiled


@pytest.fixture
def generated(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources Jinja generates Python code for from now on (each real compile)."""
    sources: list[str] = []
    generate = jinja2.Environment._generate

    def counted(self, source, name, filename, defer_init=False):
        sources.append(source)
        return generate(self, source, name, filename, defer_init=defer_init)

    monkeypatch.setattr(jinja2.Environment, "_generate", counted)
    return sources


def test_a_source_is_compiled_once_for_each_make_of_environment_and_renders_with_its_own_globals(generated):
    remember_compiled()
    remember_compiled()  # patched once, however often asked
    source = "select {{ column }} from {{ table }} -- compiled once"
    text, again, native = get_environment(), get_environment(), get_environment(native=True)
    assert text is not again
    assert text.compile(source) is again.compile(source)
    assert native.compile(source) is not text.compile(source)  # the native environment generates other code
    assert len(generated) == 2
    assert get_rendered(source, {"column": "a", "table": "t"}) == "select a from t -- compiled once"
    assert get_rendered(source, {"column": "b", "table": "u"}) == "select b from u -- compiled once"
    assert len(generated) == 2
    for _ in range(2):  # an error is not kept: each compile reports it, as dbt does
        with pytest.raises(CompilationError, match="Unexpected end of template"):
            get_rendered("select {% if x %} 1", {})


def test_the_prepared_parse_s_macros_and_sql_are_compiled_ahead(generated, tmp_path: Path):
    prepared = manifest_path().with_name(PARTIAL_PARSE_FILE)
    manifest = Manifest.from_msgpack(prepared.read_bytes(), decoder=extended_mashumuro_decoder)
    assert {macro.package_name for macro in manifest.macros.values()} >= {"cost_pipeline", "dbt", "dbt_duckdb"}
    templated = [node.raw_code for node in manifest.nodes.values() if "{{" in node.raw_code or "{%" in node.raw_code]
    assert len(templated) > 300  # models and tests: ref() and source() in each
    template_cache.clear()
    assert compile_ahead(tmp_path / "none" / PARTIAL_PARSE_FILE) == 0  # no parse prepared: nothing, no error
    assert compile_ahead(prepared) == len(template_cache.file_cache)
    assert {macro.macro_sql for macro in manifest.macros.values()} <= set(template_cache.file_cache)
    generated.clear()
    for code in templated:  # as a build renders each node's SQL
        get_environment().compile(code)
    assert generated == []
