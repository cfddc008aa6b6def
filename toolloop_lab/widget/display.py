"""How a debugger is shown: the widget, its static snapshot, its text, and the fork slot.

A widget front end draws the ES module; a renderer without widgets (GitHub, nbconvert, a
terminal) reads the text (:mod:`.text`) or the static HTML snapshot (:mod:`.snapshot`),
which goes out as a second output with a display id and is updated at the end of each run a
widget front end watched, so a saved notebook shows the run. A cell run again closes the
debugger its earlier run displayed (its state would stay in the notebook file).
"""

from __future__ import annotations

import uuid
import weakref
from typing import TYPE_CHECKING, Any

import anywidget
import ipywidgets

from toolloop_lab.widget.shown import ShownRun
from toolloop_lab.widget.snapshot import snapshot_html
from toolloop_lab.widget.text import summary_text

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


class _SnapshotSlot(anywidget.AnyWidget):
    """An invisible widget that holds the output slot of the static snapshot.

    The snapshot output carries this widget's view and the snapshot's ``text/html``: a
    widget front end shows the (empty) widget, a renderer without widgets (GitHub) shows
    the HTML. Updating that output at the end of a run re-renders this empty widget only,
    never the debugger's own view.
    """

    _esm = "export default { render({ el }) { el.hidden = true; } };"


class Display:
    """The outputs one debugger owns: its snapshot slot and the slot its forks show in."""

    def __init__(self) -> None:
        self.display_id = uuid.uuid4().hex
        self.slot: _SnapshotSlot | None = None
        self.fork_area: ipywidgets.Output | None = None
        """Where "Fork from here" shows a fork: below the debugger, once displayed."""

    @staticmethod
    def bundle(dbg: LoopDebugger) -> tuple[dict[str, Any], dict[str, Any]]:
        """The widget's own output, with the text summary as its ``text/plain``."""
        bundle = anywidget.AnyWidget._repr_mimebundle_(dbg)
        data, metadata = bundle if bundle is not None else ({}, {})
        data = dict(data)
        data["text/plain"] = dbg.summary()
        return data, dict(metadata or {})

    def _snapshot_bundle(self, dbg: LoopDebugger) -> dict[str, Any]:
        if self.slot is None:
            self.slot = _SnapshotSlot()
        slot = self.slot._repr_mimebundle_()
        data = dict(slot[0]) if slot is not None else {}
        data.pop("text/plain", None)
        data["text/html"] = dbg.snapshot_html()
        return data

    def show(self, dbg: LoopDebugger, fork_slot: bool) -> None:
        """Show the widget, then the static snapshot as a second output with a display id,
        then (``fork_slot``) the empty slot forks are shown in; close the debugger an
        earlier run of the same cell displayed."""
        from IPython import display

        _forget_earlier_in_cell(dbg)
        data, metadata = self.bundle(dbg)
        show: Any = display.display
        show(data, raw=True, metadata=metadata)
        show(self._snapshot_bundle(dbg), raw=True, display_id=self.display_id)
        if fork_slot:
            if self.fork_area is None:
                self.fork_area = ipywidgets.Output()
            area = self.fork_area._repr_mimebundle_()
            view = dict(area[0] if isinstance(area, tuple) else area or {})
            view.pop("text/plain", None)  # an empty slot: nothing to read without widgets
            show(view, raw=True)

    def update(self, dbg: LoopDebugger) -> None:
        """Redraw the static snapshot shown (after a run, for the saved notebook)."""
        if self.slot is None:
            return
        from IPython import display

        update: Any = display.update_display
        update(self._snapshot_bundle(dbg), raw=True, display_id=self.display_id)

    def close(self) -> None:
        """Close the outputs this debugger made."""
        if self.slot is not None:
            self.slot.close()
        if self.fork_area is not None:
            self.fork_area.close()


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
