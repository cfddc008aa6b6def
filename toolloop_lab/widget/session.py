"""Every run a debugger saw, kept, though it shows one: the record behind ``LoopDebugger.runs``.

A debugger shows the newest top-level run (:mod:`.shown`), yet people run a cell again,
call sub-agents from tools, and open traces a cell appended to: each run it sees is kept
here, its events in the order they came, the runs in the order they started, summed up by
the same :class:`~toolloop_lab.runview.RunBook` that sums up a trace's runs (so
``LoopDebugger.runs`` and ``runview.summaries(read_trace(p).events)`` agree, nested runs'
totals and all). Only the newest :attr:`Session.max_runs` runs are kept (finished ones go
first), so a long session stays bounded; how many were left out is counted. Recording an
event costs an append; summaries fold only what came since they were last asked for.
Callers hold the shown run's lock (:attr:`~.shown.ShownRun.lock`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from toolloop_lab.events import Event
from toolloop_lab.runview import RunBook, RunSummary

__all__ = ["MAX_RUNS", "Session"]

MAX_RUNS: Final = 1_000
"""Runs a debugger keeps by default (the newest; a session of a thousand runs fits)."""

_GONE_KEPT: Final = 10_000
"""Ids of runs left out that are remembered (a run left out while it goes on)."""


class Session:
    """The runs a debugger saw, in start order, the newest ``max_runs`` of them."""

    def __init__(self, max_runs: int = MAX_RUNS) -> None:
        self.max_runs = max_runs
        self._book = RunBook()
        self.left_out = 0
        """Runs seen but no longer kept (the oldest, past ``max_runs``)."""
        self._gone: dict[str, None] = {}
        """The runs left out most recently: their later events are not kept either (a
        run without its start would read as a new one)."""

    def record(self, event: Event) -> None:
        """Keep ``event`` with its run's (a run first seen here starts a new record)."""
        if event.run_id in self._gone:
            return
        if self._book.record(event) and len(self._book) > self.max_runs:
            self._bound()

    def _bound(self) -> None:
        """Leave out the oldest runs past ``max_runs``: finished ones first, so a run
        still going (a parent waiting for its sub-agents) keeps its record."""
        book = self._book
        while len(book) > self.max_runs:
            ids = book.run_ids()
            oldest = next((i for i in ids if book.done(i)), ids[0])
            book.drop(oldest)
            self.left_out += 1
            self._gone[oldest] = None
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
