"""Every run a debugger saw, kept, though it shows one: the record behind ``LoopDebugger.runs``.

A debugger shows the newest top-level run (:mod:`.shown`), yet people run a cell again,
call sub-agents from tools, and open traces a cell appended to: each run it sees is kept
here, its events in the order they came, the runs in the order they started. Only the
newest :attr:`Session.max_runs` runs are kept (finished ones go first), so a long session
stays bounded; how many were left out is counted. A run's summary is folded when it is
asked for and kept until the run's next event, so the observer pays one append per event.
Callers hold the shown run's lock (:attr:`~.shown.ShownRun.lock`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from toolloop_lab.events import Event
from toolloop_lab.runview import RunSummary, RunView

__all__ = ["MAX_RUNS", "Session"]

MAX_RUNS: Final = 1_000
"""Runs a debugger keeps by default (the newest; a session of a thousand runs fits)."""

_GONE_KEPT: Final = 10_000
"""Ids of runs left out that are remembered (a run left out while it goes on)."""


@dataclass(slots=True)
class _Kept:
    """One run's events, and its summary as of the last of them (``None``: not folded)."""

    events: list[Event] = field(default_factory=list)
    summary: RunSummary | None = None


class Session:
    """The runs a debugger saw, in start order, the newest ``max_runs`` of them."""

    def __init__(self, max_runs: int = MAX_RUNS) -> None:
        self.max_runs = max_runs
        self._runs: dict[str, _Kept] = {}
        self.left_out = 0
        """Runs seen but no longer kept (the oldest, past ``max_runs``)."""
        self._gone: dict[str, None] = {}
        """The runs left out most recently: their later events are not kept either (a
        run without its start would read as a new one)."""

    def record(self, event: Event) -> None:
        """Keep ``event`` with its run's (a run first seen here starts a new record)."""
        run_id = event.run_id
        kept = self._runs.get(run_id)
        if kept is not None:
            kept.events.append(event)
            kept.summary = None
        elif run_id not in self._gone:
            self._runs[run_id] = _Kept([event])
            self._bound()

    def _bound(self) -> None:
        """Leave out the oldest runs past ``max_runs``: finished ones first, so a run
        still going (a parent waiting for its sub-agents) keeps its record."""
        while len(self._runs) > self.max_runs:
            oldest = next(
                (i for i, kept in self._runs.items() if self._done(kept)), next(iter(self._runs))
            )
            del self._runs[oldest]
            self.left_out += 1
            self._gone[oldest] = None
            if len(self._gone) > _GONE_KEPT:
                del self._gone[next(iter(self._gone))]

    @staticmethod
    def _done(kept: _Kept) -> bool:
        return kept.events[-1].kind in ("loop_finish", "loop_failure")

    def summaries(self) -> tuple[RunSummary, ...]:
        """A summary of each run kept, in the order they started."""
        out = []
        for kept in self._runs.values():
            if kept.summary is None:
                kept.summary = RunSummary.of(RunView.from_events(kept.events))
            out.append(kept.summary)
        return tuple(out)

    def events(self, run_id: str) -> tuple[Event, ...]:
        """The events kept of run ``run_id`` (``()`` for a run not kept)."""
        kept = self._runs.get(run_id)
        return () if kept is None else tuple(kept.events)
