"""How a debugger is shown: its widget, its static snapshot and its text.

A widget front end draws the ES module; a renderer without widgets (GitHub, nbconvert, a
terminal) reads the text (:mod:`.text`) or the static HTML snapshot (:mod:`.snapshot`).
Where JupyterLab or Notebook 7 runs the cell, the widget and the snapshot are two outputs,
the snapshot kept up to date as runs end, so a file saved without widget state still shows
the run; where nothing draws the widget (a notebook runner), one output holds the snapshot
and the text, updated at the end of each run (see :class:`Display`, and
``docs/saved-notebooks.md`` for what each front end shows). A cell run again closes the
debugger its earlier run displayed (its state would stay in the notebook file).
"""

from __future__ import annotations

import uuid
import weakref
from typing import TYPE_CHECKING, Any, Final

import anywidget
import ipywidgets

from toolloop_lab._widget.shown import ShownRun
from toolloop_lab._widget.snapshot import snapshot_html
from toolloop_lab._widget.text import summary_text
from toolloop_lab._widget.updates import update_output, watch_cells

if TYPE_CHECKING:
    from toolloop_lab._widget.debugger import LoopDebugger

_displayed: dict[str, tuple[str, weakref.ref[LoopDebugger]]] = {}
"""Cell id -> (execute request, debugger) of the last debugger each cell displayed."""


def _request() -> dict[str, Any]:
    """The execute request being run now (empty without an IPython kernel)."""
    try:
        from IPython.core.getipython import get_ipython

        getter: Any = get_ipython  # typed in some IPython releases, not in others
        shell: Any = getter()
        kernel = getattr(shell, "kernel", None)
        parent = kernel.get_parent() if kernel is not None else None
    except Exception:  # noqa: BLE001 - no IPython, no kernel: nothing to tell
        return {}
    return parent if isinstance(parent, dict) else {}


def _cell_of_request() -> tuple[str, str] | None:
    """The notebook cell and the execute request being run now, when a front end says
    (JupyterLab, Notebook 7 and VS Code put ``cellId`` in the request's metadata)."""
    parent = _request()
    cell = (parent.get("metadata") or {}).get("cellId")
    msg_id = (parent.get("header") or {}).get("msg_id")
    if isinstance(cell, str) and isinstance(msg_id, str):
        return cell, msg_id
    return None


def _from_jupyterlab() -> bool:
    """The cell was run by JupyterLab or Notebook 7 (whose requests carry the cell's
    ``deletedCells`` beside its id): their output area is what the two outputs' styles
    are written for."""
    metadata = _request().get("metadata") or {}
    return isinstance(metadata, dict) and "cellId" in metadata and "deletedCells" in metadata


def summary(
    run: ShownRun, round_offset: int, fork_info: dict[str, Any], fork_summary: str | None
) -> str:
    """The run as plain text, with where it was forked and the fork's comparison."""
    with run.lock:
        text = summary_text(run.view, note=run.note, round_offset=round_offset)
        if fork_info:
            at = fork_info.get("at_round")
            text += f"\nfork of round {at}; rounds are numbered as in the original"
        if fork_summary is not None:
            text += "\n" + fork_summary
        return text


def snapshot(run: ShownRun, round_offset: int) -> str:
    """The run as static, escaped HTML."""
    with run.lock:
        return snapshot_html(run.view, note=run.note, round_offset=round_offset)


class Display:
    """The outputs a displayed debugger owns, and the slot its forks are shown in.

    **Where JupyterLab or Notebook 7 runs the cell** (they send the cell's id), the
    debugger is two outputs: the widget's view, then the snapshot (``text/html``, with
    the text summary as ``text/plain``) under a display id of its own. The view's output
    is never updated (a page redraws a widget's view from scratch when its output
    changes, losing what a person had open and scrolled); the snapshot's is, each time a
    run ends. While the view is drawn, the widget's stylesheet hides the snapshot below
    it; in a file saved without widget state, the view cannot be drawn (the widget
    manager reads "model not found"), and the snapshot's own style hides that output, so
    the reopened notebook shows the run, with no error text.

    **Elsewhere** the debugger is one output: the view, the snapshot and the text, under
    one display id. Where no page runs the cell (a notebook executed by
    ``nbconvert``/``nbclient``, which sends no cell id and never says hello), it is
    updated at the end of each run to the snapshot and the text alone, leaving the view
    out: the file then shows the finished run in JupyterLab, Notebook 7, GitHub and an
    exported page alike, never a widget whose state no page can draw. A page that says
    hello later gets the view back. Where another front end runs the cell (VS Code sends
    the cell's id too), the output is left as displayed, as a page draws it.

    Updates go out under the cell the kernel runs now (:mod:`.updates`), so a run started
    with ``dbg.start`` that ends after its cell still reaches the file.
    """

    def __init__(self) -> None:
        self.display_id = uuid.uuid4().hex
        """The snapshot's output (the whole output, where no page runs the cell)."""
        self.shown = False
        self.widgets_seen = False
        """A widget front end ran the cell that displayed it (it sent the cell's id)."""
        self.split = False
        """Shown as two outputs, the view and the snapshot (JupyterLab or Notebook 7 ran
        the cell)."""
        self.fork_area: ipywidgets.Output | None = None
        """Where "Fork from here" shows a fork: below the debugger, in the same output."""
        self.box: ipywidgets.VBox | None = None
        self.view_left_out = False
        """The last update left the view out: a page that says hello gets it back."""

    def view(self, dbg: LoopDebugger) -> tuple[dict[str, Any], dict[str, Any]]:
        """The widget's view (the box with the fork slot, when there is one), without
        the widget library's own text fallback (its repr, meaningless to a reader)."""
        box = self.box
        bundle = box._repr_mimebundle_() if box else anywidget.AnyWidget._repr_mimebundle_(dbg)
        got, meta = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        data = {k: v for k, v in got.items() if k == WIDGET_VIEW}
        return data, dict(meta or {})

    def bundle(self, dbg: LoopDebugger, view: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
        """One output's data: the view (``view``), the snapshot and the text summary."""
        data, metadata = self.view(dbg) if view else ({}, {})
        data["text/html"] = dbg.snapshot_html()
        data["text/plain"] = dbg.summary()
        return data, metadata

    def kept(self, dbg: LoopDebugger) -> dict[str, Any]:
        """The snapshot's own output, beside the view: the run as static HTML, marked so
        the widget's stylesheet hides it while the view is drawn, and with the style that
        hides the view's output when no widget can be drawn in it (a saved file)."""
        html = f'{KEPT_STYLE}<div class="{KEPT_CLASS}">{dbg.snapshot_html()}</div>'
        return {"text/html": html, "text/plain": dbg.summary()}

    def show(self, dbg: LoopDebugger, fork_slot: bool) -> None:
        """Show the debugger (with, for ``fork_slot``, the slot forks are shown in below
        it); close the debugger an earlier run of the same cell displayed."""
        from IPython import display

        watch_cells()
        self.widgets_seen = self.widgets_seen or _cell_of_request() is not None
        _forget_earlier_in_cell(dbg)
        if fork_slot and self.box is None:
            self.fork_area = ipywidgets.Output()
            self.box = ipywidgets.VBox([dbg, self.fork_area])
        show: Any = display.display
        self.split = self.widgets_seen and _from_jupyterlab()
        if self.split:
            data, metadata = self.view(dbg)
            show(data, raw=True, metadata=metadata)
            show(self.kept(dbg), raw=True, display_id=self.display_id)
        else:
            data, metadata = self.bundle(dbg)
            show(data, raw=True, metadata=metadata, display_id=self.display_id)
        self.shown = True

    def update(self, dbg: LoopDebugger, frontend: bool) -> None:
        """After a run: the snapshot's output (two outputs); where no page draws the
        widget, the one output as the snapshot alone (see the class); ``frontend`` (a
        page said hello) gives the view back to an output an update left it out of."""
        if not self.shown:
            return
        if self.split:
            update_output(self.kept(dbg), {}, self.display_id)
        elif frontend:
            if self.view_left_out:
                self._send(dbg, view=True)
        elif not self.widgets_seen:
            self._send(dbg, view=False)

    def _send(self, dbg: LoopDebugger, view: bool) -> None:
        data, metadata = self.bundle(dbg, view=view)
        self.view_left_out = not view
        update_output(data, metadata, self.display_id)

    def close(self) -> None:
        """Close the widgets this output made."""
        if self.fork_area is not None:
            self.fork_area.close()
        if self.box is not None:
            self.box.close()


WIDGET_VIEW: Final = "application/vnd.jupyter.widget-view+json"
KEPT_CLASS: Final = "tl-kept"
"""Marks a debugger's snapshot output; ``static/debugger.css`` hides it below a drawn view."""
KEPT_STYLE: Final = (
    "<style>.jp-OutputArea-child:not(:has(.tl-root))"
    f":has(+ .jp-OutputArea-child .{KEPT_CLASS}){{display:none}}</style>"
)
"""Hides the output just above a snapshot (the view's) while no debugger is drawn in it:
the widget manager's "Loading widget..." or "Error displaying widget: model not found"
(JupyterLab and Notebook 7). A selector cannot hold ``:has()`` inside ``:has()``."""


def _forget_earlier_in_cell(dbg: LoopDebugger) -> None:
    """Close the debugger an earlier run of this cell displayed, unless it still runs."""
    where = _cell_of_request()
    if where is None:
        return
    cell, request = where
    known = _displayed.get(cell)
    _displayed[cell] = (request, weakref.ref(dbg))
    if known is None or known[0] == request:
        return
    old = known[1]()
    if old is None or old is dbg or old.comm is None:
        return
    running = old.task is not None and not old.task.done()
    if not running:
        old.close()
