"""Every run a debugger saw, kept, though it shows one: ``LoopDebugger.runs`` and
``show_run``, the record behind them, and the run list's rows on the wire.

A debugger shows the newest top-level run (:mod:`.shown`), yet people run a cell again,
call sub-agents from tools, and open traces a cell appended to: each run it sees is kept
in its :class:`Session`, its events in the order they came, the runs in the order they
started, summed up by the same :class:`~toolloop_lab._runview.RunBook` that sums up a
trace's runs (so ``LoopDebugger.runs`` and ``RunSummary.of_stream(read_trace(p).events)``
agree, nested runs' totals and all). It keeps :attr:`Session.max_runs` runs, so a long
session stays bounded; how many it let go is counted (:attr:`Session.left_out`, and the
page is told which).

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

A person picks another run to show with :meth:`Runs.show_run`, from Python or by clicking a
row of the page's run list (a ``show_run`` request, checked like every other request:
:mod:`.requests`): that run stays on screen while other runs start, until
``show_run(None)`` follows the newest top-level run again.

The rows on the wire (:class:`RowFeed`): every events message may carry ``runs: {reset,
rows, left_out, dropped, pinned}``: the rows (``RunRow``, see :func:`row_payload`) changed
since the previous message, or all of them with ``reset`` after a page's hello;
``dropped`` names the runs the session no longer keeps since then, ``left_out`` counts
every such run, and ``pinned`` is the run a person picked to show (``None``: the view
follows the newest top-level run). A session's summaries keep the same object while a run
does not change, so telling the changed rows costs one identity check a run; a row's JSON
is made once per change; the notebook file keeps the newest rows that fit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Final

from toolloop_lab._runview import RunBook, RunSummary
from toolloop_lab._spend.usage import format_bytes
from toolloop_lab._support.escape import ID_CHARS, clip
from toolloop_lab._widget.checked import RunChecks
from toolloop_lab._widget.requests import Answer, parse_show_run
from toolloop_lab._widget.wire import clip as clip_data
from toolloop_lab.errors import UnknownRunError
from toolloop_lab.events import Event, LoopFailed, LoopFinished

if TYPE_CHECKING:
    from toolloop_lab._widget.shown import ShownRun

MAX_RUNS: Final = 1_000
"""Runs a debugger keeps by default (the newest; a session of a thousand runs fits)."""

MAX_RUN_BYTES: Final = 256_000_000
"""Bytes of events a debugger keeps by default, as a trace would write them (a thousand
runs with 5 MB prompts would hold gigabytes)."""


def event_bytes(event: Event) -> int:
    """What ``event`` weighs: its length as a trace line (its compact JSON)."""
    raw = event.to_json()
    return len(raw) if raw is not None else len(json.dumps(event.to_dict()))


_GONE_KEPT: Final = 10_000
"""Ids of runs left out that are remembered (a run left out while it goes on)."""


class Session:
    """The runs a debugger saw, in start order: ``max_runs`` of them and ``max_bytes`` of
    their events at most, more while more are going or shown (see the module's docs)."""

    def __init__(self, max_runs: int = MAX_RUNS, max_bytes: int = MAX_RUN_BYTES) -> None:
        self.max_runs = max_runs
        self.max_bytes = max_bytes
        self._book = RunBook()
        self.left_out = 0
        """Runs seen but no longer kept (finished ones, let go past ``max_runs`` or
        ``max_bytes``)."""
        self.bytes = 0
        """What the events kept weigh (:func:`event_bytes`)."""
        self.left_out_bytes = 0
        """What the events of the runs let go weighed."""
        self._weights: dict[str, int] = {}
        self._gone: dict[str, None] = {}
        """The runs left out most recently: their later events are not kept either (a
        run without its start would read as a new one)."""

    def record(self, event: Event, keep: Collection[str] = ()) -> None:
        """Keep ``event`` with its run's (a run first seen here starts a new record); past
        the bound, let finished runs go, never those in ``keep`` (the run shown)."""
        if event.run_id in self._gone:
            return
        new = self._book.record(event)
        size = event_bytes(event)
        self.bytes += size
        weights = self._weights
        weights[event.run_id] = weights.get(event.run_id, 0) + size
        ended = isinstance(event, (LoopFinished, LoopFailed))  # a run that may go now
        if (new or ended) and self._over():
            self._bound(keep)

    def _over(self) -> bool:
        return len(self._book) > self.max_runs or self.bytes > self.max_bytes

    def _bound(self, keep: Collection[str]) -> None:
        """Let the oldest finished runs go until both bounds hold, or none may go."""
        book = self._book
        while self._over():
            free = book.finished_leaves(max(len(book) - self.max_runs, 1), keep)
            if not free:
                return  # every run kept is going or shown: over the bound until they end
            for run_id in free:
                book.drop(run_id)
                size = self._weights.pop(run_id, 0)
                self.bytes -= size
                self.left_out_bytes += size
                self.left_out += 1
                self._gone[run_id] = None
                if len(self._gone) > _GONE_KEPT:
                    del self._gone[next(iter(self._gone))]
                if not self._over():
                    return

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


def let_go_text(session: Session) -> str | None:
    """What ``session`` let go, and why, in words (``None`` while it let nothing go)."""
    if not session.left_out:
        return None
    runs = f"{session.left_out:,} earlier run" + ("" if session.left_out == 1 else "s")
    return (
        f"{runs} ({format_bytes(session.left_out_bytes)} of events) let go: this debugger "
        f"keeps at most {session.max_runs:,} runs and {format_bytes(session.max_bytes)} "
        "of their events (LoopDebugger(max_runs=, max_run_bytes=)); a trace keeps them all"
    )


MAX_TAGS: Final = 20
"""Tags a row carries at most (a run tagged with thousands must not bloat the list)."""

_UNSET: Final = object()


def _decimal(value: object) -> str | None:
    return None if value is None else str(value)


def _t(value: float) -> float:
    """A time as the page needs it: to the tenth of a millisecond (shorter JSON)."""
    return round(value, 4)


def row_payload(
    summary: RunSummary, max_chars: int, checks: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One run's row as the page gets it (a ``RunRow``): JSON, every string clipped as
    the events' are (ids, names, labels), money as decimal strings (``None``: unpriced);
    ``checks``: the run's check mark (:mod:`.checked`), ``None`` when none was judged."""
    row = {
        "run_id": summary.run_id,
        "parent_run_id": summary.parent_run_id,
        "parent_tool_call_id": summary.parent_tool_call_id,
        "parent_tool_name": summary.parent_tool_name,
        "name": summary.name,
        "tags": list(summary.tags[:MAX_TAGS]),
        "source": summary.source,
        "status": summary.status,
        "outcome": summary.outcome,
        "rounds": summary.rounds,
        "tool_errors": summary.tool_errors,
        "question": summary.question,
        "input_tokens": summary.input_tokens,
        "output_tokens": summary.output_tokens,
        "cost_usd": _decimal(summary.cost_usd),
        "total_input_tokens": summary.total_input_tokens,
        "total_output_tokens": summary.total_output_tokens,
        "total_cost_usd": _decimal(summary.total_cost_usd),
        "started_at": summary.started_at,
        "duration_s": _t(summary.duration_s),
        "offset_s": _t(summary.offset_s),
        "spans": [[s.kind, _t(s.t0), _t(s.t1), s.failed] for s in summary.spans],
        "spans_left_out": summary.spans_left_out,
        "checks": checks,
    }
    clipped: dict[str, Any] = clip_data(row, max_chars)
    return clipped


class RowFeed:
    """What the page holds of the run list, and what to send it next."""

    def __init__(self, max_chars: int, checks: RunChecks | None = None) -> None:
        self.max_chars = max_chars
        self.checks = checks if checks is not None else RunChecks()
        """The check marks rows carry (a new set of checks sends every row again)."""
        self._checks_version = self.checks.version
        self._sent: dict[str, RunSummary] = {}
        self._reset = True
        self._left_out = -1
        self._pinned: object = _UNSET
        self._made: dict[str, tuple[RunSummary, object, dict[str, Any], int]] = {}
        self._marks_sent: dict[str, object] = {}

    def hello(self) -> None:
        """A page opened: the next message carries every row."""
        self._reset = True

    def _row(self, summary: RunSummary) -> tuple[dict[str, Any], int]:
        """The row of ``summary`` and its size as JSON, made once per summary."""
        made = self._made.get(summary.run_id)
        mark = self.checks.marks.get(summary.run_id)
        if made is None or made[0] is not summary or made[1] is not mark:
            row = row_payload(summary, self.max_chars, mark)
            made = (summary, mark, row, len(json.dumps(row)))
            self._made[summary.run_id] = made
        return made[2], made[3]

    def _forget_gone(self, summaries: Sequence[RunSummary]) -> None:
        """Drop the rows made of runs the session no longer keeps (bounded memory)."""
        if len(self._made) > 2 * len(summaries) + 16:
            kept = {s.run_id for s in summaries}
            self._made = {i: made for i, made in self._made.items() if i in kept}

    def next(
        self,
        summaries: Sequence[RunSummary],
        left_out: int,
        pinned: str | None,
        let_go: str | None = None,
    ) -> dict[str, Any] | None:
        """The ``runs`` part of the next message, or ``None`` when nothing changed;
        ``let_go`` says in words what the session let go (:func:`let_go_text`)."""
        sent = self._sent
        if self._checks_version != self.checks.version:
            self._checks_version, self._reset = self.checks.version, True
        reset = self._reset
        marks, marks_sent = self.checks.marks, self._marks_sent
        changed = (
            list(summaries)
            if reset
            else [
                s
                for s in summaries
                if sent.get(s.run_id) is not s
                or marks.get(s.run_id) is not marks_sent.get(s.run_id)
            ]
        )
        fresh = sum(1 for s in changed if s.run_id not in sent)
        dropped: list[str] = []
        if not reset and len(sent) + fresh != len(summaries):
            kept = {s.run_id for s in summaries}
            dropped = [run_id for run_id in sent if run_id not in kept]
        if not (
            reset or changed or dropped or left_out != self._left_out or pinned != self._pinned
        ):
            return None
        if reset:
            sent.clear()
            marks_sent.clear()
        for run_id in dropped:
            del sent[run_id]
            marks_sent.pop(run_id, None)
            self._made.pop(run_id, None)
        for summary in changed:
            sent[summary.run_id] = summary
            marks_sent[summary.run_id] = marks.get(summary.run_id)
        self._reset, self._left_out, self._pinned = False, left_out, pinned
        self._forget_gone(summaries)
        return {
            "reset": reset,
            "rows": [self._row(s)[0] for s in changed],
            "left_out": left_out,
            "dropped": dropped,
            "pinned": pinned,
            "let_go": let_go,
        }

    def saved(
        self, summaries: Sequence[RunSummary], left_out: int, budget_bytes: int
    ) -> tuple[list[dict[str, Any]], int]:
        """The newest rows whose JSON fits in ``budget_bytes`` (in start order), for the
        notebook file, and how many runs that leaves out (``left_out`` included)."""
        self._forget_gone(summaries)
        rows: list[dict[str, Any]] = []
        used = 0
        for summary in reversed(summaries):
            row, size = self._row(summary)
            if used + size > budget_bytes:
                break
            rows.append(row)
            used += size
        rows.reverse()
        return rows, left_out + len(summaries) - len(rows)


class Runs:
    """What a debugger offers about the runs it saw; its ``runs`` and ``show_run`` hand
    their work here. ``finished`` tells the page's link a finished run is shown (what the
    notebook file keeps is what is shown); ``request`` asks it for a send."""

    def __init__(
        self, run: ShownRun, finished: Callable[[], None], request: Callable[[], None]
    ) -> None:
        self._run = run
        self._finished = finished
        self._request = request

    @property
    def summaries(self) -> tuple[RunSummary, ...]:
        """A summary of every run kept (see :attr:`LoopDebugger.runs`)."""
        with self._run.lock:
            return self._run.session.summaries()

    @property
    def left_out(self) -> int:
        """Runs seen but no longer kept (see :attr:`LoopDebugger.runs_left_out`)."""
        with self._run.lock:
            return self._run.session.left_out

    def show(self, run_id: str | None) -> None:
        """Show run ``run_id`` (see :meth:`LoopDebugger.show_run`)."""
        shown = self._run
        shown.show(run_id)
        if shown.view.done:
            self._finished()
        else:
            self._request()

    def request(self, content: dict[Any, Any], show: Callable[[str | None], None]) -> Answer:
        """A ``show_run`` request from the page, carried out by ``show`` (the debugger's
        public :meth:`LoopDebugger.show_run`, so the page and Python take one path); a run
        this debugger does not keep is refused (``unknown_run``), a malformed request too
        (``bad_request``)."""
        request = parse_show_run(content)
        if isinstance(request, Answer):
            return request
        try:
            show(request.run_id)
        except UnknownRunError:
            name = clip(str(request.run_id), ID_CHARS)
            message = f"this debugger keeps no run {name!r}"
            return Answer(request.request, "show_run", False, "unknown_run", message)
        return Answer(request.request, "show_run", True)
