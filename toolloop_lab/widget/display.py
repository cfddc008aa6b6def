"""How a debugger is shown: one output holding the widget, its static snapshot and text.

A widget front end draws the ES module; a renderer without widgets (GitHub, nbconvert, a
terminal) reads the text (:mod:`.text`) or the static HTML snapshot (:mod:`.snapshot`),
both in the same output, which has a display id. Where no page draws the widget (a
notebook runner) it is updated at the end of each run, so the file shows the finished run
(see :class:`Display`). A cell run again closes the debugger its earlier run displayed (its
state would stay in the notebook file).
"""

from __future__ import annotations

import uuid
import weakref
from typing import TYPE_CHECKING, Any, Final

import anywidget
import ipywidgets

from toolloop_lab.widget.shown import ShownRun
from toolloop_lab.widget.snapshot import snapshot_html
from toolloop_lab.widget.text import summary_text
from toolloop_lab.widget.updates import update_output, watch_cells

if TYPE_CHECKING:
    from toolloop_lab.widget.debugger import LoopDebugger

__all__ = ["Display", "snapshot", "summary"]

_displayed: dict[str, tuple[str, weakref.ref[LoopDebugger]]] = {}
"""Cell id -> (execute request, debugger) of the last debugger each cell displayed."""


def _cell_of_request() -> tuple[str, str] | None:
    """The notebook cell and the execute request being run now, when a front end says
    (JupyterLab and Notebook 7 put ``cellId`` in the request's metadata)."""
    try:
        from IPython.core.getipython import get_ipython

        getter: Any = get_ipython  # typed in some IPython releases, not in others
        shell: Any = getter()
        kernel = getattr(shell, "kernel", None)
        parent = kernel.get_parent() if kernel is not None else None
    except Exception:  # noqa: BLE001 - no IPython, no kernel: nothing to tell
        return None
    if not isinstance(parent, dict):
        return None
    cell = (parent.get("metadata") or {}).get("cellId")
    msg_id = (parent.get("header") or {}).get("msg_id")
    if isinstance(cell, str) and isinstance(msg_id, str):
        return cell, msg_id
    return None


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
    """The one output a displayed debugger owns, and the slot its forks are shown in.

    The output carries the widget's view, the static snapshot (``text/html``) and the text
    summary (``text/plain``) under one display id. Where no widget front end is watching (a
    notebook executed by ``nbconvert``/``nbclient``, which sends no cell id and never says
    hello), the output is updated at the end of each run, leaving the widget's view out:
    the file then shows the finished run as a snapshot, in JupyterLab, Notebook 7, GitHub
    and an exported page alike, never a widget whose state no page can draw. A page that
    says hello later gets the view back. Updates go out under the cell the kernel runs now
    (:mod:`.updates`), so a run started with ``dbg.start`` that ends after its cell still
    reaches the file.

    Where a page draws the widget, its output is never updated: a page redraws a widget's
    view from scratch when its output changes, losing what a person had open and scrolled.
    Its snapshot and text say that they are as the debugger was when displayed (the widget
    itself is kept with saved widget state; see the README's "Saved notebooks").
    """

    def __init__(self) -> None:
        self.display_id = uuid.uuid4().hex
        self.shown = False
        self.widgets_seen = False
        """A widget front end ran the cell that displayed it (it sent the cell's id)."""
        self.fork_area: ipywidgets.Output | None = None
        """Where "Fork from here" shows a fork: below the debugger, in the same output."""
        self.box: ipywidgets.VBox | None = None
        self.view_left_out = False
        """The last update left the view out: a page that says hello gets it back."""

    def bundle(self, dbg: LoopDebugger, view: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
        """The output's data: the view (``view``), the snapshot and the text summary (said
        to be as displayed, when a page draws the widget)."""
        data: dict[str, Any] = {}
        metadata: dict[str, Any] = {}
        if view:
            box = self.box
            bundle = box._repr_mimebundle_() if box else anywidget.AnyWidget._repr_mimebundle_(dbg)
            got, meta = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
            data.update(got)
            metadata.update(meta or {})
        live = view and self.widgets_seen
        data["text/html"] = dbg.snapshot_html() + (f"<p><i>{AS_DISPLAYED}</i></p>" if live else "")
        data["text/plain"] = dbg.summary() + (f"\n({AS_DISPLAYED})" if live else "")
        return data, metadata

    def show(self, dbg: LoopDebugger, fork_slot: bool) -> None:
        """Show the debugger (with, for ``fork_slot``, the slot forks are shown in below
        it) as one output with a display id; close the debugger an earlier run of the same
        cell displayed."""
        from IPython import display

        watch_cells()
        self.widgets_seen = self.widgets_seen or _cell_of_request() is not None
        _forget_earlier_in_cell(dbg)
        if fork_slot and self.box is None:
            self.fork_area = ipywidgets.Output()
            self.box = ipywidgets.VBox([dbg, self.fork_area])
        data, metadata = self.bundle(dbg)
        show: Any = display.display
        show(data, raw=True, metadata=metadata, display_id=self.display_id)
        self.shown = True

    def update(self, dbg: LoopDebugger, frontend: bool) -> None:
        """After a run: where no page draws the widget, show the finished run as the
        snapshot (see the class); ``frontend`` (a page said hello) gives the view back to
        an output an update left it out of."""
        if not self.shown:
            return
        if frontend:
            if self.view_left_out:
                self._send(dbg, view=True)
            return
        if not self.widgets_seen:
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


AS_DISPLAYED: Final = (
    "As displayed: the live widget draws the runs after this. To keep them in the file, "
    "save widget state or run the notebook with nbconvert --execute."
)


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
