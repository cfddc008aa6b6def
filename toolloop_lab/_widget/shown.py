"""The run a debugger shows: its fold, its events, and the times the page needs.

It follows the newest top-level run (a new one replaces a finished one), or the run a
person picked (:meth:`ShownRun.show`, which starts the page over on that run's events as
the session kept them). Every job of :class:`~toolloop_lab._widget.debugger.LoopDebugger`
reads this one record: the channel sends its events, step control marks its pauses, a
fork is taken from it, the text and snapshot views read its fold. Observers may be called
from any thread, so everything here is changed under :attr:`ShownRun.lock`, which the
other jobs take too.
"""

from __future__ import annotations

import threading
from typing import Final, Literal

from toolloop_lab._engine.hooks import PausePoint
from toolloop_lab._runview import RunView
from toolloop_lab._widget.coalesce import Clock
from toolloop_lab._widget.runs import MAX_RUN_BYTES, MAX_RUNS, Session
from toolloop_lab.errors import UnknownRunError
from toolloop_lab.events import Event, LoopStarted

Added = Literal["shown", "kept", "seen"]
"""What became of an event: folded into the run shown, kept for another run, or seen
already (a debugger given to an agent twice)."""

_ZEROS_KEPT: Final = 4
"""Runs' clock zeros kept, in multiples of the session's bound."""


class ShownRun:
    """The events of one run, folded as they come; a new run replaces a finished one."""

    def __init__(
        self, clock: Clock, max_runs: int = MAX_RUNS, max_bytes: int = MAX_RUN_BYTES
    ) -> None:
        self.lock = threading.RLock()
        self.clock = clock
        self.epoch = 0
        """Which run this is: a page drops what it holds of an earlier run on a new epoch."""
        self.session = Session(max_runs, max_bytes)
        """Every run seen, this one and the others (kept across :meth:`restart`)."""
        self.pinned: str | None = None
        """The run a person picked to show; ``None``: the newest top-level run."""
        self._zeros: dict[str, float] = {}
        """Each run's time 0 on this clock, from its start event (a run shown again later)."""
        self.source_note: str | None = None
        """What the view says of the source whichever run it shows (a trace's bad lines)."""
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
        self.note: str | None = self.source_note
        self.last_event: Event | None = None
        self.stopped_by_user = False

    def restart(self) -> None:
        """Show a new run: the old one is forgotten, and the page told so (the epoch)."""
        with self.lock:
            self.clear()
            self.epoch += 1

    def add(self, event: Event) -> Added:
        """Keep ``event`` in the session and fold it in when it is the shown run's. While
        no run is pinned, a top-level run starting after the shown one ended replaces it
        (a nested run never does: it is shown when picked). The session never lets the
        run shown go."""
        with self.lock:
            if event is self.last_event:  # observed twice: never count an event twice
                return "seen"
            self.last_event = event
            if isinstance(event, LoopStarted) and self._replaces(event):
                self.restart()
            shown = self.view.run_id in (None, event.run_id)
            self.session.record(event, self._kept(event.run_id if shown else None))
            if isinstance(event, LoopStarted):
                self._started(event)
            if not shown:
                return "kept"
            self._fold(event)
            return "shown"

    def _replaces(self, event: LoopStarted) -> bool:
        """True when the run starting takes the view from the run shown (see :meth:`add`)."""
        view = self.view
        return (
            self.pinned is None
            and view.run_id not in (None, event.run_id)
            and (view.done or view.status == "idle")
            and event.parent_run_id not in self.session
        )

    def _kept(self, also: str | None = None) -> tuple[str, ...]:
        """The runs the session must keep past its bound: the run shown and the one picked."""
        return tuple(i for i in (self.view.run_id, self.pinned, also) if i is not None)

    def _started(self, event: LoopStarted) -> None:
        """Note when the run's clock read 0 (its timers tick from it when shown later)."""
        zeros = self._zeros
        zeros[event.run_id] = self.clock() - event.t
        if len(zeros) > _ZEROS_KEPT * self.session.max_runs:
            for run_id in [i for i in zeros if i not in self.session]:
                del zeros[run_id]

    def _fold(self, event: Event) -> None:
        self.view.apply(event)
        if self.zero is None:
            self.zero = self._zeros.get(event.run_id, self.clock() - event.t)
        self.events.append(event)

    def show(self, run_id: str | None) -> None:
        """Show run ``run_id`` from its events as the session kept them, and keep showing
        it (pinned); ``None`` shows the newest top-level run and follows the newest again.
        A run the session does not keep raises
        :class:`~toolloop_lab.errors.UnknownRunError`; nothing changes then."""
        with self.lock:
            session = self.session
            if run_id is not None and run_id not in session:
                raise UnknownRunError(run_id, session.run_ids(), where="this debugger")
            target = run_id if run_id is not None else session.newest_top_level()
            self.pinned = run_id
            self.restart()
            for event in session.events(target) if target is not None else ():
                self._fold(event)

    def shows(self, run_id: str) -> bool:
        """True when run ``run_id`` is the run shown."""
        with self.lock:
            return self.view.run_id == run_id

    def record(self, event: Event) -> None:
        """Keep an event of a run this view does not show (another run of a trace)."""
        with self.lock:
            self.session.record(event, self._kept())

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
