"""``trimmed_sql`` (``lib/in_database.py``), which skips DuckDB's ``trim`` for a value with nothing to trim, is
``trim`` on every Unicode code point, at either end, alone or around other text. A request's time
(``request_lines._time``) is what ``utc_timestamp_sql`` makes of the text its pattern takes, without its trim and
its patterns."""

from __future__ import annotations

import duckdb
import pytest

from cost_pipeline.ingest import request_lines
from cost_pipeline.ingest.lib.in_database import trimmed_sql
from cost_pipeline.ingest.lib.timestamps import utc_timestamp_sql

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


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_a_request_time_is_what_utc_timestamp_sql_reads(zone):
    """Every combination of year (0000 too), separator, fraction and zone (Z, +hh:mm, -hh:mm, none), the edges of
    the clock and text the pattern refuses: ``_time`` gives what the pattern and ``utc_timestamp_sql`` give, in
    any session time zone (a naive time must not be read in it)."""
    years = ["0000", "0001", "0999", "1969", "2026", "9999"]
    clocks = ["00:00:00", "23:59:59", "12:30:05"]
    fractions = ["", ".5", ".123", ".123456"]
    zones = ["", "Z", "+00:00", "+05:30", "-08:00", "+23:59", "-00:00"]
    texts = [f"{y}-11-30{s}{c}{f}{z}" for y in years for s in "T " for c in clocks for f in fractions for z in zones]
    texts += ["2026-11-30", "2026-11-30T12:30", "2026-11-30T24:00:00", " 2026-11-30T00:00:00Z"]
    texts += ["2026-11-30T00:00:00 ", "2026-11-30T00:00:00.1234567", "2026-11-30T00:00:00+0530"]
    texts += ["2026-11-30T00:00:00CET", "", "x"]
    time = request_lines._Json("kind", "text")
    pattern = request_lines._ISO_TIME
    read = utc_timestamp_sql("text")
    expected = f"case when kind = 'VARCHAR' and regexp_full_match(text, '{pattern}') then {read} end"
    with duckdb.connect() as con:
        con.execute(f"set TimeZone = '{zone}'")
        con.execute("create table texts as select 'VARCHAR' as kind, unnest(?::varchar[]) as text", [texts])
        con.execute("insert into texts values ('BIGINT', '2026-11-30T00:00:00Z'), (null, null)")
        fast = request_lines._time(time)
        rows = con.execute(f"select text, {expected} as expected, {fast} as fast from texts").fetchall()
    assert sum(expected is not None for _, expected, _ in rows) > len(texts) // 2
    assert [(text, expected, fast) for text, expected, fast in rows if expected != fast] == []
