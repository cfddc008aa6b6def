"""Every run a debugger saw, kept, though it shows one: the record behind ``LoopDebugger.runs``.

A debugger shows the newest top-level run (:mod:`.shown`), yet people run a cell again,
call sub-agents from tools, and open traces a cell appended to: each run it sees is kept
here, its events in the order they came, the runs in the order they started, summed up by
the same :class:`~toolloop_lab._runview.RunBook` that sums up a trace's runs (so
``LoopDebugger.runs`` and ``runview.summaries(read_trace(p).events)`` agree, nested runs'
totals and all). It keeps :attr:`Session.max_runs` runs, so a long session stays bounded;
how many it let go is counted (:attr:`Session.left_out`, and the page is told which).

What is let go is a finished run, the oldest first, and never one of these:

* the run on screen (or picked to be shown): its events stay for ``show_run`` and its row
  stays in ``LoopDebugger.runs`` for as long as it is shown;
* a run still going: its later events would be lost, and its parent's totals with them;
* a run another kept run is nested under: a family is never cut apart (its sub-agents go
  first), and what a run let go spent stays in its parent's totals.

So when every run kept is going or shown (a run and its sub-agents, all running) and one
more starts, the bound is exceeded: nothing is let go until runs end, and then the oldest
finished runs are let go until the bound holds again. Runs that never end cannot be let go.
Recording an event costs an append; summaries fold only what came since they were last
asked for. Callers hold the shown run's lock (:attr:`~.shown.ShownRun.lock`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final

from toolloop_lab._runview import RunBook, RunSummary
from toolloop_lab.events import Event, LoopFailed, LoopFinished

MAX_RUNS: Final = 1_000
"""Runs a debugger keeps by default (the newest; a session of a thousand runs fits)."""

_GONE_KEPT: Final = 10_000
"""Ids of runs left out that are remembered (a run left out while it goes on)."""


class Session:
    """The runs a debugger saw, in start order: ``max_runs`` of them, more while more are
    going or shown (see the module's docs)."""

    def __init__(self, max_runs: int = MAX_RUNS) -> None:
        self.max_runs = max_runs
        self._book = RunBook()
        self.left_out = 0
        """Runs seen but no longer kept (finished ones, let go past ``max_runs``)."""
        self._gone: dict[str, None] = {}
        """The runs left out most recently: their later events are not kept either (a
        run without its start would read as a new one)."""

    def record(self, event: Event, keep: Collection[str] = ()) -> None:
        """Keep ``event`` with its run's (a run first seen here starts a new record); past
        the bound, let finished runs go, never those in ``keep`` (the run shown)."""
        if event.run_id in self._gone:
            return
        new = self._book.record(event)
        ended = isinstance(event, (LoopFinished, LoopFailed))  # a run that may go now
        if (new or ended) and len(self._book) > self.max_runs:
            self._bound(keep)

    def _bound(self, keep: Collection[str]) -> None:
        """Let the oldest finished runs go until ``max_runs`` are kept, or none may go."""
        book = self._book
        while len(book) > self.max_runs:
            free = book.finished_leaves(len(book) - self.max_runs, keep)
            if not free:
                return  # every run kept is going or shown: over the bound until they end
            for run_id in free:
                book.drop(run_id)
                self.left_out += 1
                self._gone[run_id] = None
                if len(self._gone) > _GONE_KEPT:
                    del self._gone[next(iter(self._gone))]

    def summaries(self) -> tuple[RunSummary, ...]:
        """A summary of each run kept, in the order they started (the same objects for
        runs that did not change since the last call)."""
        return self._book.summaries()

    def events(self, run_id: str) -> Sequence[Event]:
        """The events kept of run ``run_id`` (``()`` for a run not kept); do not change them."""
        return self._book.events(run_id)

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._book

    def run_ids(self) -> tuple[str, ...]:
        """The runs kept, in the order they were first seen."""
        return self._book.run_ids()

    def newest_top_level(self) -> str | None:
        """The newest run kept that no kept run started (what a view follows)."""
        return self._book.newest_top_level()
