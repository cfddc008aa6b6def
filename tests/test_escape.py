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
