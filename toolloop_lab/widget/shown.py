"""The run a debugger shows: its fold, its events, and the times the page needs.

Every job of :class:`~toolloop_lab.widget.debugger.LoopDebugger` reads this one record: the
channel sends its events, step control marks its pauses, a fork is taken from it, the text
and snapshot views read its fold. Observers may be called from any thread, so everything
here is changed under :attr:`ShownRun.lock`, which the other jobs take too.
"""

from __future__ import annotations

import threading

from toolloop_lab.engine.hooks import PausePoint
from toolloop_lab.events import Event, LoopStarted
from toolloop_lab.runview import RunView
from toolloop_lab.widget.coalesce import Clock
from toolloop_lab.widget.session import MAX_RUNS, Session

__all__ = ["ShownRun"]


class ShownRun:
    """The events of one run, folded as they come; a new run replaces a finished one."""

    def __init__(self, clock: Clock, max_runs: int = MAX_RUNS) -> None:
        self.lock = threading.RLock()
        self.clock = clock
        self.epoch = 0
        """Which run this is: a page drops what it holds of an earlier run on a new epoch."""
        self.session = Session(max_runs)
        """Every run seen, this one and the others (kept across :meth:`restart`)."""
        self.clear()

    def clear(self) -> None:
        """Forget the run shown: its fold, its events and its times."""
        self.view = RunView()
        self.events: list[Event] = []
        self.zero: float | None = None
        """The clock's reading at the run's time 0."""
        self.paused_since: float | None = None
        """Run time the loop began to wait at the pause it waits at now (for the page's
        live paused segment; the ``pause`` event that ends it gives the exact time)."""
        self.note: str | None = None
        self.last_event: Event | None = None
        self.stopped_by_user = False

    def restart(self) -> None:
        """Show a new run: the old one is forgotten, and the page told so (the epoch)."""
        with self.lock:
            self.clear()
            self.epoch += 1

    def add(self, event: Event) -> bool:
        """Fold one event in; False when it is not this view's (seen already, or another
        run's, such as a nested agent's, which the session keeps). A run starting after a
        finished one replaces it."""
        with self.lock:
            if event is self.last_event:  # attached twice: never count an event twice
                return False
            self.last_event = event
            self.session.record(event)
            view = self.view
            if (
                isinstance(event, LoopStarted)
                and view.run_id not in (None, event.run_id)
                and (view.done or view.status == "idle")
            ):
                self.restart()
                view = self.view
            if view.run_id is not None and event.run_id != view.run_id:
                return False
            view.apply(event)
            if self.zero is None:
                self.zero = self.clock() - event.t
            self.events.append(event)
            return True

    def shows(self, run_id: str) -> bool:
        """True when run ``run_id`` is the run shown."""
        with self.lock:
            return self.view.run_id == run_id

    def record(self, event: Event) -> None:
        """Keep an event of a run this view does not show (another run of a trace)."""
        with self.lock:
            self.session.record(event)

    def now(self) -> float | None:
        """Run time now, while the run goes on (the page ticks its timers from it)."""
        if self.view.done or self.zero is None:
            return None
        return self.clock() - self.zero

    def paused(self, point: PausePoint) -> None:
        """The loop waits at ``point`` from now on."""
        with self.lock:
            self.view.pause(point)
            zero = self.zero
            self.paused_since = None if zero is None else max(self.clock() - zero, 0.0)

    def resumed(self) -> None:
        """The loop waits no more."""
        with self.lock:
            self.view.resume()
            self.paused_since = None

    def add_note(self, note: str) -> None:
        """Put ``note`` before any note the run has already."""
        with self.lock:
            self.note = note if self.note is None else f"{note}; {self.note}"
