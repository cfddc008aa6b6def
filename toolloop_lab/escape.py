"""The one place where untrusted text becomes HTML.

Everything that came from a model, a tool, a tool argument, a file path or an exception
passes through :func:`esc` before it reaches a widget value or an HTML report. Escaping
turns ``<``, ``>``, ``&`` and both quotes into entities, so tags, event-handler attributes,
``javascript:`` links and style blocks show as text; nothing is ever linkified.

Text is cut *before* it is escaped (:func:`esc_clip`), so a cut never splits an entity.
:func:`plain` is the plain-text counterpart for reprs shown in terminals: it keeps the
text but makes control characters (ANSI escapes, say) visible instead of active.

Both go through :func:`scrub` first: a lone surrogate (half of a UTF-16 pair, which a
model cut mid-emoji or a tool decoding badly can send) becomes U+FFFD, so a report, a
widget message or a plot label holding one can still be encoded, and the reader sees
that a character was there.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any, Final

from toolloop_lab.jsonsafe import json_safe

__all__ = ["ELLIPSIS", "esc", "esc_clip", "esc_json", "json_text", "plain", "scrub", "truncate"]

ELLIPSIS: Final = "…"

_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def scrub(value: Any) -> str:
    """``str(value)`` (``None``: empty) with every lone surrogate replaced by U+FFFD.

    Such a ``str`` fails only when it is encoded (written, sent, drawn), far from where it
    came in; replacing it here keeps the place visible and everything after it writable.
    A high and a low surrogate in a row are joined into the character they stand for.
    """
    text = "" if value is None else str(value)
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def esc(value: Any) -> str:
    """HTML-escape :func:`scrub` of ``value`` (quotes included); ``None`` becomes ``""``."""
    return html.escape(scrub(value), quote=True)


def json_text(value: Any, *, indent: int = 2) -> str:
    """Pretty, deterministic JSON of ``value`` (not escaped: pass it through :func:`esc`)."""
    return json.dumps(json_safe(value), indent=indent, sort_keys=True, ensure_ascii=False)


def esc_json(value: Any, *, indent: int = 2) -> str:
    """Pretty JSON of ``value`` (tool arguments, say), escaped for HTML."""
    return esc(json_text(value, indent=indent))


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters (with an ellipsis) and whether it was cut."""
    if limit < 1 or len(text) <= limit:
        return text, False
    return text[: max(0, limit - 1)] + ELLIPSIS, True


def esc_clip(value: Any, limit: int | None) -> tuple[str, bool]:
    """``str(value)`` cut to ``limit`` characters (``None``: no cut), then escaped.

    Returns the escaped text and whether it was cut.
    """
    text = "" if value is None else str(value)
    cut = False
    if limit is not None:
        text, cut = truncate(text, limit)
    return esc(text), cut


def plain(value: Any, limit: int | None = None) -> str:
    """Untrusted text for a plain-text repr: control characters shown as ``\\xNN``.

    Newlines and tabs stay; everything else below U+0020 (and DEL, C1) is made visible so a
    tool output cannot move a terminal's cursor or change its colours.
    """
    text = scrub(value)
    if limit is not None:
        text = truncate(text, limit)[0]
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
