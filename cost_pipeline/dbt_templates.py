"""dbt's Jinja compiled once a process, and the prepared project's compiled ahead of its builds.

A build renders every node's SQL, each test's arguments and each model's hooks through Jinja, and Jinja compiles a
template's source to Python code before it renders it. dbt keeps only its macros compiled (its template cache, for the
process); everything else is compiled again each time it is rendered: the same ``{{ log_row_count() }}`` hook once a
model, the same ``{{ test_not_null_columns(**_dbt_generic_test_kwargs) }}`` once a test. On the demo's build, 987
compiles (0.9 CPU-s) after the macros (docs/benchmarks.md).

``remember_compiled`` makes dbt's Jinja environments keep each source's code for the process: compiling depends only
on the source and the environment's make (its class, extensions, filters and syntax), which are the key, and the code
is immutable; each template is still made anew from it with its own globals, as before. Not with dbt's macro debugging
(``DBT_MACRO_DEBUGGING``: each compile then writes its own source file). ``compile_ahead`` compiles a prepared parse's
macros and nodes' SQL in a process that forks builds (``dbt_warm``'s fork server), so each forked build finds them
compiled: 1,240 compiles a demo build before, 359 after.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

_REMEMBERING = "_cost_pipeline_remembers"


def remember_compiled() -> None:
    """Patch dbt's Jinja environments in this process (before dbt runs) to keep each compiled source's code."""
    from dbt_common.clients import jinja as dbt_jinja

    environment = dbt_jinja.MacroFuzzEnvironment  # dbt's text environment and, a subclass, its native one
    if getattr(environment.compile, _REMEMBERING, False):
        return
    compiles = environment.compile
    compiled: dict[tuple, object] = {}

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):  # noqa: A001 - Jinja's name
        if raw or not isinstance(source, str) or dbt_jinja.MACRO_DEBUGGING:
            return compiles(self, source, name, filename, raw, defer_init)
        # The environment's make: its class (the native one generates other code), extensions, filters (a filter
        # Jinja does not know fails the compile) and its lexer, which Jinja shares between environments of one syntax.
        make = (type(self), self.lexer, tuple(self.extensions), frozenset(self.filters))
        key = (make, source, name, filename, defer_init)
        code = compiled.get(key)
        if code is None:
            code = compiled[key] = compiles(self, source, name, filename, raw, defer_init)
        return code

    setattr(compile, _REMEMBERING, True)
    environment.compile = compile


def compile_ahead(partial_parse: Path) -> int:
    """Compile a prepared parse's (a ``partial_parse.msgpack``) macros into dbt's template cache and its nodes' SQL
    into the compiled sources ``remember_compiled`` keeps, and return how many macros the cache holds.

    A build looks its macros up by their text and its nodes' SQL by its source: one changed since the parse is
    compiled by the build, as before, and one that does not compile here is left to the build, which reports it.
    Decoding the parse also builds, once, the decoder a build's manifest load builds (about 0.3 s)."""
    from dbt.contracts.graph.manifest import Manifest
    from dbt.parser.manifest import extended_mashumuro_decoder
    from dbt_common.clients.jinja import get_environment, template_cache

    try:
        manifest = Manifest.from_msgpack(partial_parse.read_bytes(), decoder=extended_mashumuro_decoder)
    except Exception:  # noqa: BLE001 - no parse prepared, or one of another dbt: the build parses as before
        return 0
    remember_compiled()
    for macro in manifest.macros.values():
        with contextlib.suppress(Exception):
            template_cache.get_node_template(macro)
    environment = get_environment()  # the one a node's SQL renders in (dbt.clients.jinja.get_rendered)
    for node in manifest.nodes.values():
        code = getattr(node, "raw_code", None) or ""
        if "{{" in code or "{%" in code:
            with contextlib.suppress(Exception):
                environment.compile(code)
    return len(template_cache.file_cache)
