"""The live debugger widget: every round, tool dispatch, pruning saving and budget gate.

``LoopDebugger`` (:mod:`.debugger`) is the anywidget: Python sends events (:mod:`.wire`)
and the ES module in ``static/`` folds and draws them in the browser. The class hands each
of its jobs to a module of its own: :mod:`.shown` (the run shown), :mod:`.channel` (the
link to the browser), :mod:`.control` (step control), :mod:`.forks` ("Fork from here"),
:mod:`.construct` (a finished run read from a trace) and :mod:`.display` (its outputs).
The modules beside them each do one job too: :mod:`.page` (the same module on static
pages, such as the lab's report), :mod:`.snapshot` (a static HTML picture for renderers
without widgets), :mod:`.text` (the plain-text repr), :mod:`.figures` (number formats),
:mod:`.coalesce` (message pacing), :mod:`.step` (step mode), :mod:`.requests` and
:mod:`.pausing` (changes the browser asks for at a pause).

The names below are loaded on first use, so importing :mod:`.page`, :mod:`.wire` or
:mod:`.text` (which runs this file first) loads no ipywidgets or anywidget: the report
and the text repr work where no widget can.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolloop_lab._support.lazy import lazy_getattr as _lazy_getattr

if TYPE_CHECKING:
    from toolloop_lab._widget.coalesce import Coalescer
    from toolloop_lab._widget.debugger import DebuggableAgent, LoopDebugger
    from toolloop_lab._widget.step import PauseMode, StepController

__all__ = ["Coalescer", "DebuggableAgent", "LoopDebugger", "PauseMode", "StepController"]

_LAZY = {
    "Coalescer": "toolloop_lab._widget.coalesce",
    "DebuggableAgent": "toolloop_lab._widget.debugger",
    "LoopDebugger": "toolloop_lab._widget.debugger",
    "PauseMode": "toolloop_lab._widget.step",
    "StepController": "toolloop_lab._widget.step",
}


__getattr__ = _lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
