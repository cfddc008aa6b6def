"""The widget's ES module on a static page: the same view, fed from embedded events.

The HTML report and standalone snapshots use this, so a saved report and the live widget
look alike. The events go in a ``<script type="application/json">`` block with ``<``,
``>`` and ``&`` written as JSON escapes, so no string in them can close the block or open
a tag; the module reads them with ``JSON.parse`` and renders every string as DOM text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any, Final

from toolloop_lab.escape import esc
from toolloop_lab.events import Event
from toolloop_lab.widget.wire import event_payload

__all__ = ["module_source", "static_page", "view_block"]

STATIC: Final = Path(__file__).with_name("static")


@cache
def module_source() -> tuple[str, str]:
    """The ES module and its stylesheet, as shipped in the package."""
    js = (STATIC / "debugger.js").read_text(encoding="utf-8")
    css = (STATIC / "debugger.css").read_text(encoding="utf-8")
    if "</" in js or "</" in css:  # they are embedded raw in <script>/<style> blocks
        raise ValueError("the widget's module must not contain '</'")
    return js, css


def _json_block(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def view_block(events: Iterable[Event], *, note: str | None = None, max_chars: int = 20_000) -> str:
    """An HTML fragment that draws the debugger view of ``events`` where it stands.

    Include it in a page once per run; the module and stylesheet come along in each
    fragment (a few tens of kilobytes), so a fragment stands alone.
    """
    js, css = module_source()
    payload = [event_payload(e, max_chars) for e in events]
    options = {"note": note} if note else {}
    return (
        f"<style>{css}</style>\n"
        '<div class="toolloop-view">'
        f'<script type="application/json" data-role="events">{_json_block(payload)}</script>'
        f'<script type="application/json" data-role="options">{_json_block(options)}</script>'
        f'<script type="text/plain" data-role="module">{js}</script>'
        "<noscript>This view needs JavaScript.</noscript>"
        "</div>\n"
        '<script type="module">\n'
        "for (const box of document.querySelectorAll('.toolloop-view:not([data-mounted])')) {\n"
        "  box.dataset.mounted = '1';\n"
        "  const read = (role) => box.querySelector(`script[data-role=${role}]`).textContent;\n"
        "  const code = new Blob([read('module')], {type: 'text/javascript'});\n"
        "  const url = URL.createObjectURL(code);\n"
        "  const mod = await import(url);\n"
        "  const el = document.createElement('div');\n"
        "  box.append(el);\n"
        "  mod.mount(el, JSON.parse(read('events')), JSON.parse(read('options')));\n"
        "}\n"
        "</script>\n"
    )


def static_page(
    events: Iterable[Event], *, title: str = "Agent run", note: str | None = None
) -> str:
    """A whole standalone HTML page showing one run."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "</head><body>\n"
        f"{view_block(events, note=note)}"
        "</body></html>\n"
    )
