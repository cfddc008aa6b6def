"""What a debugger opened on a finished run shows: the run's events, read from a source.

:meth:`LoopDebugger.from_trace` takes a finished run's events, a loaded
:class:`~toolloop_lab._trace.TraceRead` or a trace's path. With several runs in the source,
one is picked by the rule every reader shares (:func:`~toolloop_lab.events.select_run`);
a trace's unreadable lines become a note the view shows. A trace's path is kept, so a fork
of the run reads the trace again, whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from toolloop_lab._trace import TraceRead, read_trace
from toolloop_lab._widget.shown import ShownRun
from toolloop_lab.events import Event, select_run


@dataclass(frozen=True, slots=True)
class Replayed:
    """One finished run, as a debugger opened on it shows it."""

    events: Sequence[Event]
    note: str | None
    """What the view says about the source (lines of the trace that could not be read)."""
    path: str | os.PathLike[str] | None
    """The trace file, when the source was one."""
    every: Sequence[Event] = ()
    """Every event of the source, the other runs' included, in the source's order."""

    def show_in(self, shown: ShownRun, run_id: str | None) -> None:
        """Show the run picked (pinned when ``run_id`` named it: it stays on screen), with
        the source's note, and keep every run of the source in the session."""
        shown.pinned = run_id
        shown.source_note = self.note
        self.feed(shown)
        if self.note:
            shown.add_note(self.note)

    def feed(self, shown: ShownRun) -> None:
        """Show the run picked and keep every run of the source in the session."""
        picked = self.events[0].run_id if self.events else None
        for event in self.every or self.events:
            if event.run_id == picked:
                shown.add(event)
            else:
                shown.record(event)


def read_run(
    source: Iterable[Event] | TraceRead | str | os.PathLike[str], run_id: str | None
) -> Replayed:
    """The run ``run_id`` of ``source`` (default: the newest top-level run); a run the
    source lacks raises :class:`~toolloop_lab.errors.UnknownRunError`."""
    path = source if isinstance(source, (str, os.PathLike)) else None
    if isinstance(source, (str, os.PathLike)):
        source = read_trace(source)
    if not isinstance(source, TraceRead):
        every = tuple(source)
        return Replayed(select_run(every, run_id), None, path, every)
    note = None
    events = source.run(run_id)
    if source.skipped:
        note = f"{len(source.skipped)} unreadable trace line(s) skipped"
        if source.partial_line is not None:
            note += " (a partial last line: the writer stopped mid-run)"
    return Replayed(events, note, path, source.events)
