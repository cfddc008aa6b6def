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

import base64
import hashlib
import sys
from functools import cache
from pathlib import Path
from typing import Any, Final, TypeVar

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


def in_marimo() -> bool:
    """True inside a marimo notebook or app (its runtime is running this code)."""
    marimo = sys.modules.get("marimo")
    running: Any = getattr(marimo, "running_in_notebook", None)
    try:
        return bool(running()) if callable(running) else False
    except Exception:  # noqa: BLE001 - an unknown marimo version: not one we know
        return False


@cache
def inline_loader() -> str:
    """The loader as a ``data:`` URL: marimo imports such a module as it is, where a widget's
    module as text becomes a file served for the cell being run, and a widget made outside
    any cell (a fork made by a click) has none (marimo refuses it with an AssertionError)."""
    code = ESM_LOADER.read_text(encoding="utf-8")
    return "data:text/javascript;base64," + base64.b64encode(code.encode()).decode()


_W = TypeVar("_W", bound=ipywidgets.Widget)


_inline: dict[type[Any], type[Any]] = {}


def with_inline_loader(cls: type[_W]) -> type[_W]:
    """``cls`` with its module given as a ``data:`` URL (:func:`inline_loader`), made once."""
    made: type[_W] | None = _inline.get(cls)
    if made is None:
        made = _inline[cls] = type(
            cls.__name__, (cls,), {"_esm": inline_loader(), "__module__": cls.__module__}
        )
    return made
