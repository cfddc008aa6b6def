"""Word diffs of two texts, computed in Python for the page: what was deleted and inserted.

A comparison of two runs (:mod:`.comparison`) marks, in each reply, call's arguments and
result that differ, the words one side has and the other has not. The page draws the
parts as text nodes and never counts characters itself (a JavaScript string counts UTF-16
units, Python code points), so a diff is a list of ``[tag, a_part, b_part]``:
``difflib``'s opcodes with their text, by lines and then by words inside the lines that
changed. Diffing costs the product of both sides' lengths, so each diff, and all the diffs
of one comparison, have a bound (:data:`DIFF_EFFORT`, :data:`PAYLOAD_EFFORT`); past it a
part reads as replaced whole, and a diff has at most :data:`DIFF_OPS` parts.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from typing import Final, TypeAlias

DIFF_LINES: Final = 2_000
"""Lines of a text a diff tells apart; the rest is one last line."""
DIFF_EFFORT: Final = 1_000_000
"""The most one diff compares (lines or words of one side times the other's): about a
tenth of a second. Past it, the part reads as replaced whole."""
PAYLOAD_EFFORT: Final = 20_000_000
"""The most all the diffs of one comparison compare together."""
DIFF_OPS: Final = 200
"""Parts of one diff at most (each a marked span on the page); past them, the rest of
both texts is one last ``replace``."""
_WORDS: Final = re.compile(r"\S+\s*|\s+")
Ops: TypeAlias = list[list[str]]
"""A diff: ``[tag, a_part, b_part]`` in order."""


class Effort:
    """What the diffs of one comparison may still compare (see :data:`PAYLOAD_EFFORT`)."""

    def __init__(self, left: int = PAYLOAD_EFFORT) -> None:
        self.left = left

    def take(self, a: Sequence[str], b: Sequence[str]) -> bool:
        """Spend what diffing ``a`` against ``b`` costs; False when it costs too much."""
        cost = len(a) * len(b)
        if cost > min(DIFF_EFFORT, self.left):
            return False
        self.left -= cost
        return True


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if len(lines) > DIFF_LINES:
        lines[DIFF_LINES - 1 :] = ["".join(lines[DIFF_LINES - 1 :])]
    return lines


def _diff(a: list[str], b: list[str], effort: Effort) -> Iterator[tuple[str, str, str]]:
    """``difflib``'s opcodes of two token lists, each with its text; one ``replace`` of
    the whole when comparing them would cost too much."""
    if not effort.take(a, b):
        yield "replace", "".join(a), "".join(b)
        return
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        yield tag, "".join(a[i1:i2]), "".join(b[j1:j2])


def _merged(ops: Sequence[tuple[str, str, str]]) -> Ops:
    """Neighbouring parts of one tag as one, at most :data:`DIFF_OPS` parts."""
    out: Ops = []
    for tag, a, b in ops:
        if not a and not b:
            continue
        if out and out[-1][0] == tag:
            out[-1][1] += a
            out[-1][2] += b
        else:
            out.append([tag, a, b])
    if len(out) > DIFF_OPS:
        rest = out[DIFF_OPS - 1 :]
        out[DIFF_OPS - 1 :] = [
            ["replace", "".join(o[1] for o in rest), "".join(o[2] for o in rest)]
        ]
    return out


def text_opcodes(a: str, b: str, effort: Effort | None = None) -> Ops:
    """How ``b`` differs from ``a``: ``[tag, a_part, b_part]`` in order, by lines, then
    by words inside the lines that changed (``tag`` is ``difflib``'s: ``equal``,
    ``replace``, ``delete``, ``insert``). Joining the a parts gives ``a``, the b parts ``b``."""
    budget = effort if effort is not None else Effort()
    ops: list[tuple[str, str, str]] = []
    for tag, pa, pb in _diff(_lines(a), _lines(b), budget):
        if tag == "replace":
            ops += _diff(_WORDS.findall(pa), _WORDS.findall(pb), budget)
        else:
            ops.append((tag, pa, pb))
    return _merged(ops)
