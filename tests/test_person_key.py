"""The folding table of dbt_project/macros/person_key.sql (who is one person, R20) against Python's unicodedata: each
character becomes what Unicode says it is, and no precomposed letter of the folded blocks is left out. The ingest's
Python folding (cost_pipeline/person_name.py, the rule of a person's day) against the macro run in DuckDB through dbt:
the same name for every spelling and every character. What the key makes of names written several ways in a real
night: tests/test_confidentiality.py (Hana's four spellings); in the newest export's box and the day across exports:
tests/test_redelivery.py."""

from __future__ import annotations

import json
import os
import unicodedata

from cost_pipeline.person_name import folding, person_name
from tests.helpers import dbt_show

# The blocks whose precomposed letters fold to their base letter: Latin-1 Supplement to Latin Extended-B, Greek and
# Coptic, Cyrillic and its Supplement, Latin Extended Additional, Greek Extended.
FOLDED_BLOCKS = [(0xC0, 0x250), (0x370, 0x400), (0x400, 0x530), (0x1E00, 0x1F00), (0x1F00, 0x2000)]


def decomposes_to_a_letter_and_marks(character: str) -> bool:
    decomposed = unicodedata.normalize("NFD", character)
    return len(decomposed) > 1 and all(unicodedata.combining(mark) for mark in decomposed[1:])


def test_each_character_folds_to_what_unicode_says_it_is():
    source, target = folding()
    assert len(set(source)) == len(source)
    for character, folded in zip(source, target, strict=False):
        if folded == " ":
            assert character.isspace(), f"U+{ord(character):04X}"
        elif unicodedata.decomposition(character).startswith("<wide>"):
            assert unicodedata.normalize("NFKC", character) == folded, f"U+{ord(character):04X}"
        else:
            assert unicodedata.normalize("NFD", character)[0] == folded, f"U+{ord(character):04X}"
            assert decomposes_to_a_letter_and_marks(character), f"U+{ord(character):04X}"
    # Past the end of target, removed: invisible format characters, the soft hyphen and combining marks only.
    for character in source[len(target) :]:
        assert unicodedata.category(character) in {"Cf", "Mn"}, f"U+{ord(character):04X}"


def test_every_unicode_space_precomposed_letter_and_combining_mark_is_folded():
    source, _target = folding()
    every_space = {chr(cp) for cp in range(0x3001) if chr(cp).isspace() and chr(cp) != " "}
    every_space -= {"\x1c", "\x1d", "\x1e", "\x1f"}  # Python's isspace: separators of ASCII, not Unicode's spaces
    assert every_space <= set(source)
    precomposed = {
        chr(cp) for lo, hi in FOLDED_BLOCKS for cp in range(lo, hi) if decomposes_to_a_letter_and_marks(chr(cp))
    }
    assert precomposed <= set(source)
    assert {chr(cp) for cp in range(0x300, 0x370)} <= set(source)
    assert {"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"} <= set(source)
    # Full-width digits and Latin letters: ０ is 0, Ｚ is Z, ｚ is z.
    wide = {chr(cp) for cp in range(0xFF10, 0xFF5B) if unicodedata.normalize("NFKC", chr(cp)).isalnum()}
    assert wide <= set(source)


# One name written as Harvest profiles and exports write it, and spellings that are not all one name.
TRICKY = [
    "Alice Zhang",
    "alice  zhang",
    "  ALICE\u00a0Zhang\t",
    "Alice\u2003\u3000Zhang",
    "Al\u200bice\u200d Zh\u00adang\ufeff",
    "\uff21\uff4c\uff49\uff43\uff45 \uff3a\uff48\uff41\uff4e\uff47",
    "Zo\u00e9 M\u00fcller",
    "Zoe\u0301 Mu\u0308ller",
    "ZOE\u0301 MU\u0308LLER",
    "\u0130smail \u015e\u0131k",
    "O'Brien-Sm\u00efth Jr.",
    "\u039f\u0394\u039f\u03a3 \u03cc\u03b4\u03bf\u03c2",
    "\u0419\u043e\u0301\u0440\u0434\u0438",
    "Stra\u00dfe STRASSE \u1e9e",
    "\u00c6sa \u00d8rsted \u0141ukasz",
    "Nguy\u1ec5n V\u0103n \u0110\u1ee9c",
    "\u674e\u3000\u5c0f\u9f99",
    "",
    "\u00a0\u200b",
]


def test_the_ingest_folds_every_name_and_character_as_the_macro_does_in_duckdb(tmp_path):
    """The macro's person_name compiled by dbt and run in DuckDB, beside cost_pipeline.person_name.person_name: the
    spellings above, and every character of the Basic Multilingual Plane alone, fold alike. The ingest's rule of a
    person's day and the models' person_key then decide "the same person" alike."""
    spellings = ", ".join(
        f"({number}, '{name}')" for number, name in enumerate(name.replace("'", "''") for name in TRICKY)
    )
    character = "chr(cast(code as integer))"
    sql = (
        "select cast(to_json((select list(folded order by number) from (select number, {{ person_name('name') }} "
        f"as folded from (values {spellings}) as spellings(number, name)) as f)) as varchar) as tricky, "
        f"cast(to_json((select list(folded order by code) from (select code, {{{{ person_name('{character}') }}}} "
        "as folded from range(1, 65536) as codes(code) where code < 55296 or code > 57343) as g)) as varchar) "
        "as every_character"
    )
    shown = dbt_show(tmp_path, sql, {**os.environ, "COST_WAREHOUSE": str(tmp_path / "warehouse.duckdb")})

    assert json.loads(shown["tricky"]) == [person_name(name) for name in TRICKY]
    characters = [chr(code) for code in range(1, 65536) if code < 55296 or code > 57343]
    in_duckdb = json.loads(shown["every_character"])
    assert len(in_duckdb) == len(characters)
    assert [
        f"U+{ord(c):04X}" for c, folded in zip(characters, in_duckdb, strict=True) if person_name(c) != folded
    ] == []
    # One person however the name is written; another name stays another.
    assert len({person_name(name) for name in TRICKY[:6]}) == 1
    assert person_name(TRICKY[6]) == person_name(TRICKY[7]) == person_name(TRICKY[8]) == "zoe muller"
    assert person_name(TRICKY[0]) != person_name(TRICKY[6])
