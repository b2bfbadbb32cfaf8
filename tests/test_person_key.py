"""The folding table of dbt_project/macros/person_key.sql (who is one person, R20) against Python's unicodedata: each
character becomes what Unicode says it is, and no precomposed letter of the folded blocks is left out. What the
key makes of names written several ways in a real night: tests/test_confidentiality.py (Hana's four spellings)."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import jinja2

MACROS = Path(__file__).resolve().parents[1] / "dbt_project" / "macros" / "person_key.sql"
# The blocks whose precomposed letters fold to their base letter: Latin-1 Supplement to Latin Extended-B, Greek and
# Coptic, Cyrillic and its Supplement, Latin Extended Additional, Greek Extended.
FOLDED_BLOCKS = [(0xC0, 0x250), (0x370, 0x400), (0x400, 0x530), (0x1E00, 0x1F00), (0x1F00, 0x2000)]


def folding() -> tuple[str, str]:
    """The macro's [from, to] of the translate, rendered with plain Jinja (dbt's ``return``)."""
    returned = []
    template = jinja2.Environment().from_string(MACROS.read_text(encoding="utf-8"))
    template.make_module({"return": lambda value: returned.append(value) or ""}).person_name_folding()
    ((source, target),) = returned
    return source, target


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
