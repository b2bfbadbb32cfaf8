"""The SQL that tells blank and comment lines without DuckDB's ``trim`` (``lib/in_database.py``) says what trim
would, on every Unicode code point."""

from __future__ import annotations

import duckdb
import pytest

from cost_pipeline.ingest.lib.in_database import blank_sql, comment_sql

# Every code point but the surrogates, which are not characters.
_CODE_POINTS = "select chr(cast(i as integer)) as c from range(1, 1114112) r(i) where i not between 55296 and 57343"


@pytest.fixture(scope="module")
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


def test_blank_is_what_trim_empties(con):
    texts = f"select c || c as text from ({_CODE_POINTS}) union all select '' union all select 'a'"
    differ, blanks = con.execute(
        f"select count(*) filter (where (trim(text) = '') <> {blank_sql('text')}), "
        f"count(*) filter (where {blank_sql('text')}) from ({texts})"
    ).fetchone()
    assert differ == 0
    assert blanks == 18  # the 17 space separators DuckDB trims (U+0020, U+00A0, U+3000...), and ''


def test_a_comment_is_what_starts_with_hash_once_trimmed(con):
    texts = (
        f"select c || '#' as text from ({_CODE_POINTS}) union all select c || 'x#' from ({_CODE_POINTS}) "
        "union all select '#' union all select ''"
    )
    differ, comments = con.execute(
        f"select count(*) filter (where starts_with(ltrim(text), '#') <> {comment_sql('text')}), "
        f"count(*) filter (where {comment_sql('text')}) from ({texts})"
    ).fetchone()
    assert differ == 0
    assert comments == 20  # '#' after each of the 17 separators, '##', '#x#' and '#'
