"""The one place where untrusted text becomes HTML.

Everything that came from a model, a tool, a tool argument, a file path or an exception
passes through :func:`esc` before it reaches a widget value or an HTML report. Escaping
turns ``<``, ``>``, ``&`` and both quotes into entities, so tags, event-handler attributes,
``javascript:`` links and style blocks show as text; nothing is ever linkified.
"""

from __future__ import annotations

import html
import json
from typing import Any, Final

from toolloop_lab.jsonsafe import json_safe

__all__ = ["ELLIPSIS", "esc", "esc_json", "truncate"]

ELLIPSIS: Final = "…"


def esc(value: Any) -> str:
    """HTML-escape ``str(value)`` (quotes included); ``None`` becomes an empty string."""
    if value is None:
        return ""
    return html.escape(str(value), quote=True)


def esc_json(value: Any, *, indent: int = 2) -> str:
    """Pretty JSON of ``value`` (tool arguments, say), escaped for HTML."""
    text = json.dumps(json_safe(value), indent=indent, sort_keys=True, ensure_ascii=False)
    return esc(text)


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters (with an ellipsis) and whether it was cut."""
    if limit < 1 or len(text) <= limit:
        return text, False
    return text[: max(0, limit - 1)] + ELLIPSIS, True
