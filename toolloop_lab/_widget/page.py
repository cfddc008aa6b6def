"""The widget's ES module on a static page: the same view, fed from embedded events.

The HTML report and standalone pages use this, so a saved report and the live widget look
alike. A page holds the stylesheet and the module once (:func:`view_assets`) and one slot
per run (:func:`view_slot`). A slot's events sit in a ``<script type="application/json">``
block with ``<``, ``>`` and ``&`` written as JSON escapes, so no string in them can close
the block or open a tag; the module reads them with ``JSON.parse`` and renders every
string as DOM text. The one executable script is :data:`LOADER`, whose hash
(:data:`LOADER_CSP`) a Content-Security-Policy can allow alone.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Final

from toolloop_lab._support.escape import esc
from toolloop_lab._widget.wire import event_payload
from toolloop_lab.events import Event

STATIC: Final = Path(__file__).with_name("static")

LOADER: Final = (
    "const src = document.getElementById('toolloop-module').textContent;\n"
    "const code = new Blob([src], {type: 'text/javascript'});\n"
    "const mod = await import(URL.createObjectURL(code));\n"
    "for (const box of document.querySelectorAll('.toolloop-view')) {\n"
    "  const block = (sel) => box.querySelector(`script[${sel}]`);\n"
    "  const read = (role) => JSON.parse(block(`data-role=${role}`).textContent);\n"
    "  const el = document.createElement('div');\n"
    "  box.append(el);\n"
    "  const options = read('options');\n"
    "  if (!block('data-role=runs')) { mod.mount(el, read('events'), options); continue; }\n"
    "  const of = (id) => {\n"
    "    const at = Object.hasOwn(options.runs, id) ? options.runs[id] : null;\n"
    '    const found = at === null ? null : block(`data-run="${at}"`);\n'
    "    return found ? JSON.parse(found.textContent) : null;\n"
    "  };\n"
    "  mod.mountRuns(el, read('runs'), of, options);\n"
    "}\n"
)
"""The page's only script: it imports the embedded module and mounts every slot (one
run's, or several runs' with their run list: each run's events parsed when it is shown)."""

LOADER_CSP: Final = (
    "'sha256-" + base64.b64encode(hashlib.sha256(LOADER.encode()).digest()).decode() + "' blob:"
)
"""``script-src`` sources that allow :data:`LOADER` and the module it imports, nothing else."""


@cache
def module_source() -> tuple[str, str]:
    """The ES module and its stylesheet, as shipped in the package."""
    js = (STATIC / "debugger.js").read_text(encoding="utf-8")
    css = (STATIC / "debugger.css").read_text(encoding="utf-8")
    if "</" in js or "</" in css:  # they are embedded raw in <script>/<style> blocks
        raise ValueError("the widget's module must not contain '</'")
    return js, css


def _json_block(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, sort_keys=True)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def view_assets() -> str:
    """The stylesheet, the module (as inert text) and the loader: once per page."""
    js, css = module_source()
    return (
        f"<style>{css}</style>\n"
        f'<script type="text/plain" id="toolloop-module">{js}</script>\n'
        f'<script type="module">{LOADER}</script>\n'
    )


def view_slot(events: Iterable[Event], *, note: str | None = None, max_chars: int = 20_000) -> str:
    """Where one run's view is drawn: its events and options as JSON data blocks."""
    payload = [event_payload(e, max_chars) for e in events]
    options = {"note": note} if note else {}
    return (
        '<div class="toolloop-view">'
        f'<script type="application/json" data-role="events">{_json_block(payload)}</script>'
        f'<script type="application/json" data-role="options">{_json_block(options)}</script>'
        "</div>\n"
    )


def runs_slot(
    rows: Sequence[dict[str, Any]],
    events_of: Mapping[str, Sequence[Event]],
    *,
    shown: str | None = None,
    note: str | None = None,
    left_out: int = 0,
    let_go: str | None = None,
    max_chars: int = 20_000,
) -> str:
    """Where several runs are drawn, with their run list: the rows (``row_payload``'s), and
    each run's events in a data block of its own, named by number (never by its id, which
    a model or a caller chose), read only when a person shows that run."""
    numbers = {run_id: i for i, run_id in enumerate(events_of)}
    options: dict[str, Any] = {
        "runs": numbers,
        "shown": shown,
        "left_out": left_out,
        "let_go": let_go,
    }
    if note:
        options["note"] = note
    blocks = [
        f'<script type="application/json" data-run="{numbers[run_id]}">'
        f"{_json_block([event_payload(e, max_chars) for e in events])}</script>"
        for run_id, events in events_of.items()
    ]
    return (
        '<div class="toolloop-view">'
        f'<script type="application/json" data-role="runs">{_json_block(list(rows))}</script>'
        f'<script type="application/json" data-role="options">{_json_block(options)}</script>'
        + "".join(blocks)
        + "</div>\n"
    )


def page(body: str, *, title: str) -> str:
    """A whole standalone HTML page around ``body`` (slots), with the module once."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(PAGE_CSP)}">'
        "</head><body>\n"
        f"{body}"
        "<noscript>This view needs JavaScript.</noscript>\n"
        f"{view_assets()}"
        "</body></html>\n"
    )


PAGE_CSP: Final = (
    f"default-src 'none'; script-src {LOADER_CSP}; style-src 'unsafe-inline'; img-src data:; "
    "connect-src 'none'; base-uri 'none'; form-action 'none'"
)
"""What a standalone page may load: its one loader script and the module it imports from a
``blob:``, its inline styles, images written into it; nothing from a network."""


def static_page(
    events: Iterable[Event], *, title: str = "Agent run", note: str | None = None
) -> str:
    """A whole standalone HTML page showing one run."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "</head><body>\n"
        f"{view_slot(events, note=note)}"
        "<noscript>This view needs JavaScript.</noscript>\n"
        f"{view_assets()}"
        "</body></html>\n"
    )
