"""``trimmed_sql`` (``lib/in_database.py``), which skips DuckDB's ``trim`` for a value with nothing to trim, is
``trim`` on every Unicode code point, at either end, alone or around other text."""

from __future__ import annotations

import duckdb

from cost_pipeline.ingest.lib.in_database import trimmed_sql

# Every code point but the surrogates, which are not characters.
_CHARACTERS = "select chr(cast(i as integer)) as c from range(0, 1114112) r(i) where i not between 55296 and 57343"


def test_trimmed_is_trim_on_every_code_point():
    texts = (
        f"select c as text from ({_CHARACTERS}) union all select c || 'x' || c from ({_CHARACTERS}) "
        f"union all select 'x' || c from ({_CHARACTERS}) union all select c || 'x' from ({_CHARACTERS}) "
        f"union all select 'x' || c || 'x' from ({_CHARACTERS}) "
        "union all select '' union all select null union all select ' é ' union all select 'é'"
    )
    with duckdb.connect() as con:
        differ, trimmed = con.execute(
            f"select count(*) filter (where trim(text) is distinct from {trimmed_sql('text')}), "
            f"count(*) filter (where trim(text) <> text) from ({texts})"
        ).fetchone()
    assert differ == 0
    assert trimmed == 1 + 17 * 4  # ' é ', and the 17 space separators DuckDB trims (U+0020, U+00A0, U+3000...)
