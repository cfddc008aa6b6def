"""A debugger's runs: every run it saw (``LoopDebugger.runs``), and which one it shows.

A debugger shows the newest top-level run and keeps a summary of every run it sees
(:mod:`.session`). A person picks another with :meth:`RunList.show_run`, from Python or by
clicking a row of the page's run list (a ``show_run`` request, checked like every other
request: :mod:`.requests`): that run stays on screen while other runs start, until
``show_run(None)`` follows the newest top-level run again.
"""

from __future__ import annotations

from typing import Any

from toolloop_lab._runview import RunSummary
from toolloop_lab._support.escape import ID_CHARS, clip
from toolloop_lab._widget.channel import Channel
from toolloop_lab._widget.requests import Answer, parse_show_run
from toolloop_lab._widget.shown import ShownRun
from toolloop_lab.errors import UnknownRunError


class RunList:
    """What ``LoopDebugger`` offers about the runs it saw (mixed into it)."""

    _run: ShownRun
    _channel: Channel

    @property
    def runs(self) -> tuple[RunSummary, ...]:
        """A summary of every run this debugger saw, in the order they started: each run
        of a connected agent, every run in a ``watch()`` block, every run of the trace it
        was opened on, sub-agents included (with their parent's tool call, and each run's
        totals with the runs nested under it). It shows one of them (the newest top-level
        run, or the one :meth:`show_run` picked). It keeps ``max_runs``, letting the oldest
        finished runs go (:attr:`runs_left_out`), never the run shown nor a run still
        going: while more than ``max_runs`` go on at once, it keeps more (see
        :mod:`toolloop_lab._widget.session`)."""
        with self._run.lock:
            return self._run.session.summaries()

    @property
    def runs_left_out(self) -> int:
        """Runs seen but no longer in :attr:`runs` (finished ones, the oldest, let go past
        ``max_runs``; what a nested one spent stays in its parent's totals)."""
        with self._run.lock:
            return self._run.session.left_out

    def show_run(self, run_id: str | None) -> None:
        """Show run ``run_id`` (one of :attr:`runs`, a nested run too) and keep showing it
        while other runs start; ``None`` shows the newest top-level run and follows the
        newest again. The page starts over on the run's events as this debugger kept them.
        A run it does not keep raises :class:`~toolloop_lab.errors.UnknownRunError` (a
        ``KeyError``), and nothing changes."""
        shown = self._run
        shown.show(run_id)
        if shown.view.done:
            self._channel.finished()  # what the notebook file keeps is what is shown
        else:
            self._channel.request()

    def _show_asked(self, content: dict[Any, Any]) -> Answer:
        """A ``show_run`` request from the page; a run this debugger does not keep is
        refused (``unknown_run``), a malformed request too (``bad_request``)."""
        request = parse_show_run(content)
        if isinstance(request, Answer):
            return request
        try:
            self.show_run(request.run_id)
        except UnknownRunError:
            name = clip(str(request.run_id), ID_CHARS)
            message = f"this debugger keeps no run {name!r}"
            return Answer(request.request, "show_run", False, "unknown_run", message)
        return Answer(request.request, "show_run", True)
