"""The one JSONL line splitter for traces, lab saves and recordings.

Lines are split on ``\\n`` only. ``str.splitlines()`` also splits on U+2028, U+2029, NEL and
other characters that JSON text may hold unescaped, which cut a valid line in two. Each
reader then parses a line with its own pydantic adapter (strict: files are untrusted).

``forgiving=True`` is for files a live writer appends to (traces): a last line without its
newline is the writer killed mid-write, reported apart instead of parsed. Files written in
one go (lab saves, recordings) read their last line whether or not it ends in a newline.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["JsonlLines", "Line", "read_lines"]


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
