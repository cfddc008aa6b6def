"""The front end, once per notebook: one hidden widget model holds the ES module and its CSS.

An anywidget carries its ``_esm`` and ``_css`` in its own state, so every debugger saved in
a notebook (by JupyterLab's "Save Widget State Automatically" or by ``nbclient``) would hold
its own copy of the whole front end (about 100 kB). Instead each debugger's ``_esm`` is a
small loader (``src/loader.js``, :data:`ESM_LOADER`) that reads the module from the one
:class:`FrontEnd` model of the kernel, imports it once per page and version, and adds its
stylesheet once.
The saved notebook then holds the front end once, however many debuggers it shows.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final

import ipywidgets
import traitlets

STATIC: Final = Path(__file__).with_name("static")
"""The front end: ``debugger.js`` (the esbuild bundle of ``src/``) and ``debugger.css``."""

ESM_LOADER: Final = Path(__file__).parent / "src" / "loader.js"
"""Each debugger's own module (its ``_esm``): it loads the front end from the shared model."""


class FrontEnd(ipywidgets.Widget):  # type: ignore[misc]  # ipywidgets ships no types
    """A model with no view (ipywidgets' base ``WidgetModel``): the widget's ES module and
    stylesheet, for every debugger."""

    code = traitlets.Unicode("").tag(sync=True)
    """The bundle ``static/debugger.js``: an ES module whose default export is the widget."""
    css = traitlets.Unicode("").tag(sync=True)
    version = traitlets.Unicode("").tag(sync=True)
    """A digest of both: a page imports each version once, and a new one after an upgrade."""


_shared: FrontEnd | None = None


def front_end() -> FrontEnd:
    """The kernel's one :class:`FrontEnd` (made again if it was closed)."""
    global _shared
    if _shared is None or _shared.comm is None:
        code = (STATIC / "debugger.js").read_text(encoding="utf-8")
        css = (STATIC / "debugger.css").read_text(encoding="utf-8")
        digest = hashlib.sha256((code + "\0" + css).encode()).hexdigest()[:16]
        _shared = FrontEnd(code=code, css=css, version=digest)
    return _shared
