"""The debugger's side of a comparison: ``dbg.compare(a, b)`` and the page's request.

:class:`Comparisons` is a base of :class:`~toolloop_lab._widget.debugger.LoopDebugger`: it
compares two runs (run ids of the debugger's runs, or anything
:func:`toolloop_lab.compare` takes) and shows them through the synced ``comparison`` trait
(:mod:`.comparing` writes it). The page asks for two of the debugger's runs with ``{"type":
"compare", "a", "b"}`` (the run list, "Swap sides") and closes the comparison with
``"action": "close"``: untrusted input, checked by :func:`~.requests.parse_compare`, naming
runs the debugger holds, never a file.
"""

from __future__ import annotations

import os
from typing import Any

from toolloop_lab._replay.compare import RunComparison, RunSource, compare
from toolloop_lab._support.errortext import describe
from toolloop_lab._widget.comparing import comparison_payload
from toolloop_lab._widget.requests import Answer, CloseComparison, parse_compare
from toolloop_lab._widget.shown import ShownRun
from toolloop_lab.errors import ToolLoopLabError, UnknownRunError
from toolloop_lab.events import Event


class Comparisons:
    """What a debugger compares, and how it answers the page (a base of ``LoopDebugger``,
    which has these attributes)."""

    comparison: Any
    """The synced trait the page draws (``{}``: none)."""
    max_text_chars: int
    saved_state_bytes: int
    _run: ShownRun

    def compare(
        self,
        a: RunSource,
        b: RunSource,
        *,
        a_run_id: str | None = None,
        b_run_id: str | None = None,
    ) -> RunComparison:
        """Show runs ``a`` and ``b`` side by side, round by round, in this view; returns
        the comparison (:func:`toolloop_lab.compare`: print it, or its ``frame()``).

        Each is a run id of :attr:`runs` (a ``str``), or what :func:`toolloop_lab.compare`
        takes: a result, its events, a trace (a path or a ``TraceRead``; ``a_run_id`` /
        ``b_run_id`` pick one of its runs), the error a failed run raised or what
        :func:`toolloop_lab.fork` returned (lined up with its original). A run id this
        debugger does not hold raises :class:`~toolloop_lab.errors.UnknownRunError`
        naming the runs it holds. The page shows it above the run, with a close button;
        it is kept in the notebook (:attr:`comparison`).
        """
        sources = [self._source(side) for side in (a, b)]
        result = compare(sources[0], sources[1], a_run_id=a_run_id, b_run_id=b_run_id)
        self._show_comparison(result)
        return result

    def _source(self, value: RunSource) -> RunSource:
        """A run id of this debugger's runs (a ``str``) is that run's events; a ``str``
        naming no run but a file is a trace's path; anything else is for
        :func:`~toolloop_lab.compare` to read (or refuse)."""
        if not isinstance(value, str):
            return value
        events = self._run_events(value)
        if events:
            return events
        if os.path.isfile(value):
            return value
        with self._run.lock:
            ids = [s.run_id for s in self._run.session.summaries()]
        raise UnknownRunError(value, ids, where="this debugger's runs")

    def _run_events(self, run_id: str) -> tuple[Event, ...]:
        with self._run.lock:
            return tuple(self._run.session.events(run_id))

    def _show_comparison(self, result: RunComparison) -> None:
        ids = (result.a_run_id, result.b_run_id)
        held = all(i is not None and self._run_events(i) for i in ids)
        self.comparison = comparison_payload(
            result,
            max_chars=self.max_text_chars,
            budget_bytes=self.saved_state_bytes,
            runs_held=held,
        )

    def _compare_request(self, content: dict[Any, Any]) -> Answer:
        """The page's ``compare`` request, checked and carried out: the runs it names must
        be this debugger's; never a file."""
        request = parse_compare(content)
        if isinstance(request, Answer):
            return request
        if isinstance(request, CloseComparison):
            self.comparison = {}
            return Answer(request.request, "close", True)
        sides = [self._run_events(run_id) for run_id in (request.a, request.b)]
        for run_id, side in zip((request.a, request.b), sides, strict=True):
            if not side:
                said = f"no run {run_id!r} among this debugger's runs"
                return Answer(request.request, "compare", False, "unknown_run", said)
        try:
            self._show_comparison(compare(sides[0], sides[1]))
        except ToolLoopLabError as exc:  # a run with no events, say
            reason = getattr(exc, "field", None) or type(exc).__name__
            return Answer(request.request, "compare", False, str(reason), describe(exc))
        return Answer(request.request, "compare", True, message="the comparison is shown")
