"""The one place where untrusted text becomes something a person reads.

Everything that came from a model, a tool, a tool argument, a file path or an exception
passes through here before it reaches a widget value, a text repr, a plot or an HTML
report:

* :func:`scrub` makes any value a string that can be encoded: a lone surrogate (half of
  a UTF-16 pair, which a model or a tool can emit) becomes U+FFFD, so writing a report or
  drawing a label never fails on it and the reader still sees that something was there.
* :func:`clip` bounds a field: it keeps the first ``limit`` characters and says how long
  the text was with a visible ``… (N chars)`` marker. A model controls the length of tool
  names, tool-call ids and finish reasons too, not only of its text, so every view clips
  every model-controlled field, with the limits below per kind of field.
* :func:`esc` HTML-escapes: ``<``, ``>``, ``&`` and both quotes become entities, so tags,
  event-handler attributes, ``javascript:`` links and style blocks show as text; nothing
  is ever linkified. :func:`esc_clip` clips *before* escaping, so a cut never splits an
  entity.
* :func:`plain` is the plain-text counterpart for terminals: control characters (ANSI
  escapes, say) are shown as ``\\xNN`` instead of acting.
* :func:`visible` shows every bidirectional control (:data:`BIDI_CONTROLS`) as its code,
  ``\\u202e``, so ``invoice_\\u202efdp.exe`` never reads ``invoice_exe.pdf``: both
  :func:`plain` and :func:`esc` apply it, and the browser's ``visible`` (``_widget/src/
  format.js``) applies the same rule to the page. The data itself (a trace, the events the
  browser folds, an argument a person edits) keeps them: only what a person reads changes.
"""

from __future__ import annotations

import html
import re
from typing import Any, Final

ID_CHARS: Final = 100
"""Characters shown of an id (tool-call id, run id); real ones are 20 to 40."""
NAME_CHARS: Final = 200
"""Characters shown of a name or a short label: tool, model, scenario and error-type
names, finish and error reasons. Real tool names stop at 64 (OpenAI) or 128 characters."""
TEXT_CHARS: Final = 2_000
"""Characters shown of free text that is not a message's content: an invalid call's parse
error, a note, a scenario description. Content (model text, tool output, arguments) has its
own preview length, and a "show all" in the widget."""

BIDI_CONTROLS: Final = (
    "\u202a\u202b\u202c\u202d\u202e"  # embeddings, the overrides, and the end of either
    "\u2066\u2067\u2068\u2069"  # the isolates, and the end of one
    "\u200e\u200f\u061c"  # the marks LRM, RLM and ALM
)
"""The characters that change the order a person reads text in without being seen: the
explicit embeddings, overrides and isolates, which reorder letters (Trojan Source), and the
implicit marks, which are invisible and move the digits and punctuation beside them
(``\\u200f12 34`` reads ``34 12``). Right-to-left letters themselves are shown as they are."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_BIDI: Final = re.compile(f"[{BIDI_CONTROLS}]")
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


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


def clip(value: Any, limit: int | None) -> str:
    """:func:`scrub`-bed text cut to its first ``limit`` characters (``None``: no cut).

    A cut text ends in ``… (N chars)``, N being the whole length, so a reader can tell a
    clipped field from a short one and knows how much was left out.
    """
    text = "" if value is None else str(value)
    if limit is not None and len(text) > limit:
        text = f"{text[: max(0, limit)]}… ({len(text):,} chars)"
    return scrub(text)


def visible(value: Any) -> str:
    """:func:`scrub` of ``value`` with every bidirectional control shown as its code
    (``\\u202e``), so nothing reorders what a person reads (see :data:`BIDI_CONTROLS`)."""
    text = scrub(value)
    if _BIDI.search(text) is None:
        return text
    return _BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def esc(value: Any) -> str:
    """HTML-escape :func:`visible` of ``value`` (quotes included); ``None`` becomes ``""``."""
    return html.escape(visible(value), quote=True)


def esc_clip(value: Any, limit: int | None) -> str:
    """:func:`clip` then :func:`esc`: the cut is made on the text, never inside an entity."""
    return esc(clip(value, limit))


def plain(value: Any, limit: int | None = None) -> str:
    """Untrusted text for a plain-text repr: clipped, control characters shown as ``\\xNN``
    and bidirectional ones as ``\\uNNNN`` (:func:`visible`).

    Newlines and tabs stay; everything else below U+0020 (and DEL, C1) is made visible so a
    tool output cannot move a terminal's cursor or change its colours.
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", visible(clip(value, limit)))
