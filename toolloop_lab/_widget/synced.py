"""What a debugger shares with the page: its synced traits, saved with the notebook.

Everything here reaches the browser as widget state (and, with saved widget state, the
notebook file): the module that loads the front end, the run kept for a reopened file,
whether the controls and "Fork from here" can act, and a fork's or a comparison's framing.
:class:`~toolloop_lab._widget.debugger.LoopDebugger` adds the behaviour.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import anywidget
import ipywidgets
import traitlets

from toolloop_lab._widget.frontend import FrontEnd, front_end

LOADER: Final = Path(__file__).parent / "src" / "loader.js"
"""Each debugger's own module: it loads the front end from the shared model."""


class SyncedState(anywidget.AnyWidget):
    """The debugger's traits the page reads (and the notebook file keeps)."""

    _esm = LOADER
    _front_end = traitlets.Instance(FrontEnd).tag(sync=True, **ipywidgets.widget_serialization)
    """The kernel's one model holding the front end (:mod:`.frontend`): saved once."""

    live = traitlets.Bool(True).tag(sync=True)
    """True when Continue, Step and Stop can act (a replay has nothing to step)."""
    _pause_on = traitlets.Unicode("off").tag(sync=True)
    saved_events: traitlets.List[Any] = traitlets.List().tag(sync=True)
    """The newest rounds of the last finished run, kept in the notebook file."""
    saved_omitted = traitlets.Int(0).tag(sync=True)
    """Rounds of that run left out of ``saved_events`` (they are in the trace)."""
    saved_omitted_messages = traitlets.Int(0).tag(sync=True)
    """Conversation messages those rounds brought in (the saved view's counts add them)."""
    saved_runs: traitlets.List[Any] = traitlets.List().tag(sync=True)
    """The newest rows of the run list, kept in the notebook file."""
    saved_runs_left_out = traitlets.Int(0).tag(sync=True)
    """Runs seen but not in ``saved_runs`` (the oldest)."""
    can_fork = traitlets.Bool(False).tag(sync=True)
    """True when "Fork from here" can act: the debugger knows an agent to fork with."""
    round_offset = traitlets.Int(0).tag(sync=True)
    """Added to every round number shown: a fork's rounds read as the original's."""
    fork_info: traitlets.Dict[str, Any] = traitlets.Dict().tag(sync=True)
    """For a fork's debugger: where it was forked."""
    comparison: traitlets.Dict[str, Any] = traitlets.Dict().tag(sync=True)
    """Two runs side by side, as :mod:`.comparing` writes them (``{}``: none)."""

    @traitlets.default("_front_end")
    def _shared_front_end(self) -> FrontEnd:
        return front_end()
