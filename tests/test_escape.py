"""``toolloop_lab._support.escape``: the functions every view passes untrusted text through."""

from __future__ import annotations

import pytest

from toolloop_lab._support.escape import esc, plain, scrub


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("a\ud800b", "a\ufffdb"),  # a lone high surrogate
        ("x\udfff", "x\ufffd"),  # a lone low one
        ("\ude00\ud83d", "\ufffd\ufffd"),  # a pair in the wrong order is two lone halves
        ("\ud83d\ude00", "\U0001f600"),  # a pair in order is the character it encodes
        ("plain ✓ text", "plain ✓ text"),
        (None, ""),
        (12, "12"),
    ],
)
def test_scrub_replaces_lone_surrogates(text: object, shown: str) -> None:
    assert scrub(text) == shown
    scrub(text).encode("utf-8")  # raises on a surrogate left in


def test_html_and_plain_text_are_scrubbed_too() -> None:
    assert esc("<\ud800>") == "&lt;\ufffd&gt;"
    assert plain("\x1b\ud800") == "\\x1b\ufffd"


BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""The explicit bidirectional formatting characters: embeddings, overrides, isolates and
the two that end them."""
MARKS = "\u200e\u200f\u061c"
"""The implicit marks (LRM, RLM, ALM): invisible, and able to reorder the digits and
punctuation beside them."""


@pytest.mark.parametrize("char", list(BIDI + MARKS))
def test_bidirectional_controls_are_shown_never_obeyed(char: str) -> None:
    """``invoice_\\u202efdp.exe`` would read ``invoice_exe.pdf``: in a terminal and in HTML
    the character is shown as its code, as control characters are."""
    name = f"invoice_{char}fdp.exe"
    code = f"\\u{ord(char):04x}"
    assert plain(name) == f"invoice_{code}fdp.exe"
    assert esc(name) == f"invoice_{code}fdp.exe"
    assert char not in plain(name, 5) + esc(name)


def test_a_cut_text_counts_the_characters_it_had_and_shows_its_controls() -> None:
    """The cut is made on the text (its marker counts what was there); what is left is
    then made visible, so a cut never splits a shown code."""
    assert plain("\u202eabcdef", 3) == "\\u202eab… (7 chars)"
    assert esc(f"<{BIDI}>") == "&lt;" + "".join(f"\\u{ord(c):04x}" for c in BIDI) + "&gt;"
