"""The one JSONL line splitter, and line codec, for traces, lab saves and recordings.

Lines are split on ``\\n`` only. ``str.splitlines()`` also splits on U+2028, U+2029, NEL and
other characters that JSON text may hold unescaped, which cut a valid line in two. Each
reader then parses a line with its own pydantic adapter (strict: files are untrusted).

``forgiving=True`` is for files a live writer appends to (traces): a last line without its
newline is the writer killed mid-write, reported apart instead of parsed. Files written in
one go (lab saves, recordings) read their last line whether or not it ends in a newline.

**Surrogate halves.** A Python ``str`` may hold a high surrogate followed by a low one as
two code points (tools that assemble UTF-16 halves leave them so). ASCII JSON writes each
as a ``\\uXXXX`` escape, and every JSON reader joins such a pair of escapes into the one
character it spells, so the text would read back changed. :func:`dump_line` therefore
keeps the halves apart: in every string (keys too) of a line that holds such a pair, a run
of ``k`` U+FDD0 (a noncharacter, meant for a program's own use) between a high and a low
surrogate is written as ``k + 1`` of them, and the line is marked ``"surrogate_halves": 1``.
:func:`load_line` undoes it on marked lines only, so a line without the mark (every line
of older files, and every line without such a pair) reads exactly as plain JSON. Other
JSON readers see the halves, each with one U+FDD0 between them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolloop_lab._support.jsonsafe import json_safe

HALVES_KEY: Final = "surrogate_halves"
"""The mark of a line whose strings keep surrogate halves apart (see the module notes)."""
_HALVES_SCHEME: Final = 1
_APART: Final = re.compile("([\ud800-\udbff])(\ufdd0*)(?=[\udc00-\udfff])")
"""A high surrogate, the U+FDD0 run after it, and a low surrogate next (not consumed)."""
_KEPT_APART: Final = re.compile("([\ud800-\udbff])\ufdd0(\ufdd0*)(?=[\udc00-\udfff])")


@dataclass(frozen=True, slots=True)
class Line:
    """One non-blank line of a JSONL file, as bytes (decoding is the parser's job)."""

    number: int
    """1-based line number in the file."""
    data: bytes


@dataclass(frozen=True, slots=True)
class JsonlLines:
    """The complete lines of a file and, in forgiving mode, an unfinished last line."""

    lines: tuple[Line, ...]
    partial: Line | None = None


def read_lines(path: str | os.PathLike[str], *, forgiving: bool = False) -> JsonlLines:
    """Split ``path`` into its non-blank lines; ``OSError`` propagates to the caller."""
    raw = Path(path).read_bytes()
    parts = raw.split(b"\n")
    complete, tail = parts[:-1], parts[-1]
    lines = [Line(n, part) for n, part in enumerate(complete, start=1) if part.strip()]
    partial: Line | None = None
    if tail.strip():
        last = Line(len(complete) + 1, tail)
        if forgiving:
            partial = last
        else:
            lines.append(last)
    return JsonlLines(tuple(lines), partial)


def dump_line(value: Mapping[str, Any], *, sort_keys: bool = True, compact: bool = False) -> str:
    """One line (without its newline): ASCII JSON of ``json_safe(value)``, surrogate
    halves kept apart and marked (see the module notes); ASCII, so lone surrogates survive
    and no raw newline or line separator can cut the line."""
    data = json_safe(value)
    text = _dump(data, sort_keys=sort_keys, compact=compact)
    if "\\ud" not in text and "\\uD" not in text:  # no surrogate escape: nothing to keep apart
        return text
    kept, changed = _apart(data)
    if not changed:
        return text
    return _dump({**kept, HALVES_KEY: _HALVES_SCHEME}, sort_keys=sort_keys, compact=compact)


def load_line(raw: bytes | str) -> Any:
    """One line's JSON value, read by Python's own parser (it keeps lone surrogates exactly),
    surrogate halves of a marked line put back together. Raises ``json.JSONDecodeError``
    (a ``ValueError``) for text that is not JSON, or nested too deep to read."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise json.JSONDecodeError("nested too deep to read", _text(raw), 0) from None
    if type(data) is dict and HALVES_KEY in data:
        mark = data.pop(HALVES_KEY)
        if type(mark) is int and mark == _HALVES_SCHEME:
            return _together(data)
    return data


def _dump(data: Any, *, sort_keys: bool, compact: bool) -> str:
    separators = (",", ":") if compact else None
    return json.dumps(
        data, allow_nan=False, ensure_ascii=True, sort_keys=sort_keys, separators=separators
    )


def _apart(value: Any) -> tuple[Any, bool]:
    """``value`` with one more U+FDD0 between every high and low surrogate; whether any."""
    if isinstance(value, str):
        kept = _APART.sub("\\1\ufdd0\\2", value)
        return kept, kept != value
    if isinstance(value, dict):
        pairs = [(_apart(k), _apart(v)) for k, v in value.items()]
        changed = any(k[1] or v[1] for k, v in pairs)
        return ({k[0]: v[0] for k, v in pairs} if changed else value), changed
    if isinstance(value, list):
        items = [_apart(v) for v in value]
        changed = any(c for _, c in items)
        return ([v for v, _ in items] if changed else value), changed
    return value, False


def _together(value: Any) -> Any:
    """The inverse of :func:`_apart`: one U+FDD0 fewer between every pair of halves."""
    if isinstance(value, str):
        return _KEPT_APART.sub("\\1\\2", value) if "\ufdd0" in value else value
    if isinstance(value, dict):
        return {_together(k): _together(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_together(v) for v in value]
    return value


def _text(raw: bytes | str) -> str:
    return raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
