"""The live debugger widget: every round, tool dispatch, pruning saving and budget gate.

``LoopDebugger`` is the ipywidgets view; the modules beside it each do one job and import
no ipywidgets except :mod:`.debugger`: :mod:`.html` (panels as escaped HTML), :mod:`.text`
(the plain-text repr), :mod:`.figures` (number formats), :mod:`.coalesce` (redraw pacing)
and :mod:`.step` (step mode).
"""

from __future__ import annotations

from toolloop_lab.widget.coalesce import Coalescer
from toolloop_lab.widget.debugger import DebuggableAgent, LoopDebugger
from toolloop_lab.widget.step import PauseMode, StepController

__all__ = ["Coalescer", "DebuggableAgent", "LoopDebugger", "PauseMode", "StepController"]
