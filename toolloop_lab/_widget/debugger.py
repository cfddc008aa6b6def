"""``LoopDebugger``: the live view of one tool-loop run, drawn in the browser (anywidget).

It is an observer: given where a run takes observers (``LLMAgent(model, tools,
observers=[dbg])``), it connects to the agent (its step hook, the agent kept for Stop and
forks: :class:`~toolloop_lab._engine.hooks.ConnectsToAgent`) and folds each event into the
run it shows (:mod:`.shown`); the ES module ``static/debugger.js``, shipped in the package,
folds the same events in the browser, ticks the timers of work in progress and renders
every untrusted string as DOM text.

The class holds the traits the page syncs (traitlets must be on the class) and its public
methods, each thin: the work is done by parts it owns, one module each:

* ``_run`` (:mod:`.shown`): the run on screen, and every run seen (:mod:`.runs`);
* ``_channel`` (:mod:`.channel`): the link to the browser (paced batches, a page's hello,
  answers, the saved notebook state of a finished run);
* ``_control`` (:mod:`.control`): the run it started, the agents it is connected to, and the
  changes a person makes at a pause (:mod:`.requests`), with :mod:`.reach` (which runs the
  clicks reach);
* ``_steps`` (:mod:`.steps`): step mode (``pause_on``, ``next_pause``, Step, Continue, Stop);
* ``_runs`` (:mod:`.runs`): :attr:`runs` and :meth:`show_run`;
* ``_comparisons`` (:mod:`.comparison`): :meth:`compare` and the page's request;
* ``_forking`` (:mod:`.forks`): "Fork from here" (:meth:`fork`);
* ``_display`` (:mod:`.display`): the widget's outputs, its static snapshot and its text.

A finished run from a trace is :meth:`from_trace` (:mod:`.replayed`). The loop itself never
imports this package. Observers may be called from any thread (a change made from the
kernel's thread emits its event there), so everything the observer touches is guarded by
one lock (the shown run's).
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anywidget
import comm
import ipywidgets
import traitlets

from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._engine.hooks import PausePoint
from toolloop_lab._replay.compare import RunComparison, RunSource
from toolloop_lab._replay.fork import Fork
from toolloop_lab._replay.fork.result import ForkResult
from toolloop_lab._runview import RunSummary, RunView
from toolloop_lab._support.errortext import describe
from toolloop_lab._trace import TraceRead
from toolloop_lab._widget.channel import Channel, Endpoints
from toolloop_lab._widget.checked import RunChecks
from toolloop_lab._widget.coalesce import Clock, Scheduler, loop_scheduler
from toolloop_lab._widget.comparison import Comparisons
from toolloop_lab._widget.control import Control, DebuggableAgent
from toolloop_lab._widget.display import Display, snapshot, summary
from toolloop_lab._widget.export import chosen, write_runs_html
from toolloop_lab._widget.forks import Forking
from toolloop_lab._widget.frontend import ESM_LOADER, FrontEnd, front_end
from toolloop_lab._widget.reach import Reach
from toolloop_lab._widget.replayed import read_run
from toolloop_lab._widget.requests import Answer, request_id
from toolloop_lab._widget.runs import MAX_RUN_BYTES, MAX_RUNS, Runs, let_go_text
from toolloop_lab._widget.shown import ShownRun
from toolloop_lab._widget.steps import PauseMode, Steps, check_mode
from toolloop_lab.errors import ConfigurationError, ToolLoopLabError
from toolloop_lab.events import Event, LoopFailed, LoopFinished

if TYPE_CHECKING:
    from toolloop_lab.checks import Check, CheckReport
    from toolloop_lab.checks._test_file import SavedTest

R = TypeVar("R")

_LIMITS = {
    "max_text_chars": "the longest text sent to the page, in characters",
    "saved_state_bytes": "what the notebook file keeps of a finished run, in bytes",
    "max_runs": "how many runs the run list keeps",
    "max_run_bytes": "how many bytes of events the runs kept may weigh (as a trace writes them)",
}


def _check_limits(*, max_messages_per_second: object, **limits: object) -> None:
    """Refuse a limit that is not a whole number >= 1, or a send rate that is not a
    positive number, naming the argument, what it is for, and what it got: before the
    widget opens a comm or registers itself, so a failed constructor leaves nothing behind
    that could raise later (from ``__del__``, say)."""
    for name, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigurationError(
                f"LoopDebugger({name}={value!r}): {name} is {_LIMITS[name]}; "
                "pass a whole number >= 1",
                field=name,
            )
    rate = max_messages_per_second
    if (
        isinstance(rate, bool)
        or not isinstance(rate, (int, float))
        or not math.isfinite(rate)
        or rate <= 0
    ):
        raise ConfigurationError(
            f"LoopDebugger(max_messages_per_second={rate!r}): how often the page is sent "
            "new events; pass a number > 0 (10 is the default)",
            field="max_messages_per_second",
        )


class LoopDebugger(anywidget.AnyWidget):
    """Live debugger for tool-loop runs: give it to an agent as an observer, display it,
    then run the agent::

        dbg = LoopDebugger()
        agent = LLMAgent(model, tools, observers=[dbg])
        dbg                                   # display it
        task = dbg.start(agent, "a question")  # or agent.run(...), await agent.arun(...)

    Every control the run allows (pause, step, edit, skip, add a message, Stop, "Fork from
    here") reaches it however it is started; where a click cannot reach a run (a blocking
    ``agent.run`` keeps the kernel busy), :attr:`reach` says so and the page shows why.

    ``fork_with`` is the agent "Fork from here" runs a fork with (its model, tools and
    config); without it, the agent this debugger last connected to or ran. It shows one run
    and keeps a summary of every run it sees (:attr:`runs`), ``max_runs`` of them whose
    events weigh ``max_run_bytes`` at most, as a trace writes them (more while more are
    going at once: the run shown and runs still going are never let go); the oldest finished
    runs go first, and :attr:`runs_left_out` counts them.
    """

    # -- the traits the page reads (and the notebook file keeps) ---------------------------
    _esm = ESM_LOADER
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
    """Two runs side by side, as :mod:`.comparison` writes them (``{}``: none)."""

    @traitlets.default("_front_end")
    def _shared_front_end(self) -> FrontEnd:
        return front_end()

    def __init__(
        self,
        *,
        max_text_chars: int = 20_000,
        max_messages_per_second: float = 10.0,
        saved_state_bytes: int = 256_000,
        pause_on: PauseMode = "off",
        fork_with: DebuggableAgent[Any] | None = None,
        max_runs: int = MAX_RUNS,
        max_run_bytes: int = MAX_RUN_BYTES,
        checks: Sequence[Check] | None = None,
        clock: Clock = time.monotonic,
        schedule: Scheduler = loop_scheduler,
    ) -> None:
        _check_limits(
            max_text_chars=max_text_chars,
            saved_state_bytes=saved_state_bytes,
            max_runs=max_runs,
            max_run_bytes=max_run_bytes,
            max_messages_per_second=max_messages_per_second,
        )
        check_mode(pause_on, f"LoopDebugger(pause_on={pause_on!r})")
        judged = RunChecks()
        judged.give(checks)  # refused here, before the widget opens a comm
        super().__init__()
        self._checks = judged
        try:
            bounds = (max_runs, max_run_bytes)
            self._build(max_text_chars, saved_state_bytes, pause_on, fork_with, bounds, clock)
            self._connect(max_messages_per_second, schedule)
        except BaseException:
            self.close()  # a failed constructor leaves no comm nor registered widget behind
            raise

    def _build(
        self,
        max_text_chars: int,
        saved_state_bytes: int,
        pause_on: PauseMode,
        fork_with: DebuggableAgent[Any] | None,
        bounds: tuple[int, int],
        clock: Clock,
    ) -> None:
        """The run shown and the parts that need no page yet; ``bounds``: the runs kept
        and the bytes their events may weigh."""
        self.max_text_chars = max_text_chars
        self.saved_state_bytes = saved_state_bytes
        self._run = ShownRun(clock, *bounds)
        self._forking = Forking(fork_with)
        self._display = Display()
        self._control = Control(self._run, pause_on, self._request, self._on_result)
        self._steps = Steps(self._control, self._show_mode, lambda: self.round_offset)
        self._comparisons = Comparisons(
            self._run,
            self._show_comparison,
            max_chars=max_text_chars,
            budget_bytes=saved_state_bytes,
        )

    def _connect(self, max_messages_per_second: float, schedule: Scheduler) -> None:
        """The channel to the page, the run list that sends through it, and the traits that
        follow step mode."""
        ends = Endpoints(
            send=self.send,
            silent=self._silent,
            state=lambda: self._control.state(self.max_text_chars),
            keep=self._keep_saved,
            on_control=self._control.on_control,
            on_request=self._carry_out,
            heard=self._control.holder.heard_page,
        )
        self._channel = Channel(
            self._run,
            ends,
            max_text_chars=self.max_text_chars,
            saved_state_bytes=self.saved_state_bytes,
            max_messages_per_second=max_messages_per_second,
            schedule=schedule,
        )
        self._channel.rows.checks = self._checks
        self._runs = Runs(self._run, self._channel.finished, self._channel.request)
        self._pause_on = self._control.steps.mode
        self._update_can_fork()
        self.observe(lambda change: self._steps.from_page(change["new"]), names="_pause_on")
        self.on_msg(lambda _widget, content, _buffers: self._on_page(content))

    def _show_mode(self, mode: PauseMode) -> None:
        if self._pause_on != mode:
            self._pause_on = mode

    def _show_comparison(self, payload: dict[str, Any]) -> None:
        self.comparison = payload

    # -- observer ---------------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        """Fold one event in and queue it for the browser (sent in paced batches)."""
        if self._run.add(event) == "seen":
            return
        self._control.observed(event)
        if isinstance(event, (LoopFinished, LoopFailed)):
            self._judge(event.run_id)
            # a connected middleware knows what its runs run with only once one has run
            self._update_can_fork()
            self._channel.finished()
            if not self._channel.frontend:  # a notebook runner: the output, while it looks
                self._display.update(self, False)
        else:
            self._request()

    def _request(self) -> None:
        self._channel.request()

    def _judge(self, run_id: str) -> None:
        """Judge an ended top-level run by the checks given (its mark goes with its row)."""
        if not self._checks.checks:
            return
        run = self._run
        with run.lock:
            if run_id not in run.session:
                return
            events = tuple(run.session.events(run_id))
            summary = next((s for s in run.session.summaries() if s.run_id == run_id), None)
            if summary is None or summary.parent_run_id is not None:
                return
            self._checks.judge(run_id, events)
            self._checks.forget(set(run.session.run_ids()))

    # -- checks ------------------------------------------------------------------------
    @property
    def checks(self) -> tuple[Check, ...]:
        """The checks judged on each top-level run that ends (:mod:`toolloop_lab.checks`):
        the run list marks each run's result, and a failed check's round. Setting them
        judges every finished run kept again."""
        return self._checks.checks

    @checks.setter
    def checks(self, checks: Sequence[Check] | None) -> None:
        run = self._run
        with run.lock:
            self._checks.give(checks)
            ended = [s.run_id for s in run.session.summaries() if s.status != "running"]
        for run_id in ended:
            self._judge(run_id)
        self._request()

    def check_report(self, run_id: str | None = None) -> CheckReport | None:
        """The report of the checks on run ``run_id`` (default: the run shown); ``None``
        when it was not judged (no checks given, a nested run, or still going)."""
        with self._run.lock:
            chosen = run_id if run_id is not None else self._shown_id()
        return None if chosen is None else self._checks.reports.get(chosen)

    def _shown_id(self) -> str | None:
        started = self._run.view.started
        return None if started is None else started.run_id

    def save_test(
        self,
        path: str | os.PathLike[str],
        run_id: str | None = None,
        *,
        name: str | None = None,
        overwrite: bool = False,
    ) -> SavedTest:
        """ "Save as test": write run ``run_id``'s recording (default: the run shown), the
        checks read off it and a pytest file at ``path`` that replays it and verifies them
        (:func:`toolloop_lab.checks.save_test`); the page's button does the same."""
        from toolloop_lab.checks._test_file import save_test

        with self._run.lock:
            chosen = run_id if run_id is not None else self._shown_id()
            if chosen is None or chosen not in self._run.session:
                raise ConfigurationError(
                    "this debugger has no run to save as a test"
                    + ("" if chosen is None else f" with id {chosen!r}"),
                    field="run_id",
                )
            events = tuple(self._run.session.events(chosen))
        return save_test(path, events, name=name, run_id=chosen, overwrite=overwrite)

    def _on_page(self, content: Any) -> None:
        """A message from a page; its hello gives back a view an update left out."""
        self._channel.receive(content)
        if self._display.view_left_out and self._channel.frontend:
            self._display.update(self, True)

    def _silent(self) -> bool:
        """True when no front end can ever receive a message (no kernel, or closed)."""
        channel = getattr(self, "comm", None)
        return channel is None or isinstance(channel, comm.DummyComm)

    def _keep_saved(
        self, saved: list[Any], omitted: int, messages: int, rows: list[Any], runs_out: int
    ) -> None:
        """Keep the end of the finished run and the run list in the saved notebook state."""
        with self.hold_sync():
            self.saved_events = saved
            self.saved_omitted = omitted
            self.saved_omitted_messages = messages
            self.saved_runs = rows
            self.saved_runs_left_out = runs_out
        self._display.update(self, self._channel.frontend)

    def _carry_out(self, content: dict[Any, Any]) -> Answer:
        """A change at a pause, "Fork from here", a run to show or a comparison, asked by
        the browser."""
        if content.get("type") == "show_run":
            return self._runs.request(content, self.show_run)
        if content.get("type") == "compare":
            return self._comparisons.request(content)
        if content.get("type") == "save_test":
            return self._save_test_request(content)
        return self._control.carry_out(
            content,
            lambda request: self._forking.from_browser(
                self, request, self._control.agent, self._display.fork_area
            ),
        )

    def _save_test_request(self, content: dict[Any, Any]) -> Answer:
        """The page's "Save as test": the run shown, to ``tests/test_<run id>.py`` under
        the kernel's working folder (a file already there is never replaced)."""
        number = request_id(content)
        shown_id = self._shown_id()
        if shown_id is None:
            return Answer(number, "save_test", False, "unknown_run", "no run is shown")
        path = Path("tests") / f"test_run_{re.sub(r'[^0-9A-Za-z_]', '_', shown_id)}.py"
        try:
            saved = self.save_test(path, shown_id)
        except (ToolLoopLabError, OSError) as exc:
            field = getattr(exc, "field", None)
            return Answer(number, "save_test", False, field or "failed", describe(exc))
        return Answer(
            number,
            "save_test",
            True,
            None,
            f"wrote {saved.test_file} and its recording {saved.recording}",
        )

    def flush(self) -> None:
        """Send whatever is pending now, ignoring the pace (tests, the end of a script)."""
        self._channel.pacer.flush()

    # -- connecting and running -----------------------------------------------------------
    def _connect_agent(self, agent: DebuggableAgent[Any]) -> Callable[[], None]:
        """Called by an agent this debugger is given to as an observer (``LLMAgent(...,
        observers=[dbg])``, ``agent.subscribe(dbg)``): hold its runs in step mode and
        remember it for Stop and "Fork from here"; returns the disconnect (see
        :class:`~toolloop_lab._engine.hooks.ConnectsToAgent`)."""
        disconnect = self._control.connect(agent)
        self._update_can_fork()
        return disconnect

    def start(
        self,
        agent: DebuggableAgent[R],
        prompt: str | Sequence[Any],
        *,
        pause_on: PauseMode | None = None,
    ) -> asyncio.Task[R]:
        """Run ``agent`` on ``prompt`` as a background task on the running event loop:
        the kernel stays free, so Continue, Step and Stop work in any kernel; the task's
        result (or exception) is there afterwards (``await task``, ``task.result()``). An
        agent the debugger is not among the observers of yet is connected for this run.
        ``pause_on`` sets :attr:`pause_on` first (the page's selector shows it; later runs
        keep it). A :class:`~toolloop_lab.Fork` is shown with its rounds numbered as its
        source's."""
        if pause_on is not None:
            self._steps.set_mode(check_mode(pause_on, f"dbg.start(..., pause_on={pause_on!r})"))
        self._run.pinned = None  # a run started here is the one to see
        at_round = agent.at_round if isinstance(agent, Fork) else 1
        self.round_offset = self._forking.offset + at_round - 1
        task = self._control.start(agent, prompt, self)
        self.live = True
        self._forking.source = None
        self._update_can_fork()
        self._request()
        return task

    def _on_result(self, result: object) -> None:
        if isinstance(result, ForkResult):
            self._forking.show_comparison(self, result)

    @property
    def task(self) -> asyncio.Task[Any] | None:
        """The task of the last :meth:`start`, if any."""
        return self._control.task

    # -- figures for Python-side readers ----------------------------------------------
    @property
    def events(self) -> tuple[Event, ...]:
        """The events of the run shown, in the order they came."""
        with self._run.lock:
            return tuple(self._run.events)

    @property
    def view(self) -> RunView:
        """The fold of the events seen so far (read it, do not change it)."""
        return self._run.view

    @property
    def draws(self) -> int:
        """Messages sent (or that would have been, headless) so far."""
        return self._channel.pacer.draws

    @property
    def redraw_requests(self) -> int:
        """Sends asked for so far (one per event, plus pauses and clicks)."""
        return self._channel.pacer.requests

    def redraw(self) -> None:
        """Send the pending state now."""
        self._channel.pacer.force()

    # -- step mode ------------------------------------------------------------------------
    @property
    def pause_on(self) -> PauseMode:
        """Where step mode pauses a run the controls reach (:attr:`reach`): ``"off"``,
        ``"model"`` (before each model call), ``"tools"`` (before each round's tool
        dispatch) or ``"both"``. Setting it changes the run going on too; the page's
        selector shows it."""
        return self._steps.mode

    @pause_on.setter
    def pause_on(self, mode: PauseMode) -> None:
        self._steps.set_mode(check_mode(mode, f"dbg.pause_on = {mode!r}"))

    @property
    def paused_at(self) -> PausePoint | None:
        """Where the loop waits right now, if it does (its round numbered as this
        debugger's header and summary number it): read what is pending and change it
        through the point (:class:`~toolloop_lab.PausePoint`)."""
        return self._steps.paused_at

    async def next_pause(self, timeout: float = 10.0) -> PausePoint:
        """Wait until the run pauses, and return where (as :attr:`paused_at`); at once
        when it waits at a pause nobody has stepped past yet.

        Raises :class:`~toolloop_lab.errors.NoPauseError` when no pause can come (no run
        goes on; ``pause_on`` is ``"off"``; Continue let the run go; it ended without
        pausing) and :class:`~toolloop_lab.errors.PauseTimeoutError` (a ``TimeoutError``)
        when ``timeout`` seconds pass first: the run goes on.
        """
        return await self._steps.next_pause(timeout)

    def step(self) -> bool:
        """Go on to the next pause point; False, and nothing changes, when not paused."""
        return self._steps.step()

    def continue_(self) -> bool:
        """Let this run go on to its end without pausing (the next run pauses again);
        False, and nothing changes, when not paused."""
        return self._steps.continue_()

    def stop(self) -> bool:
        """Stop the run; the view keeps its partial counts (its cell raises ``RunStopped``)."""
        return self._steps.stop()

    @property
    def reach(self) -> Reach:
        """What the controls can do for the run shown, and why not: ``stop`` and ``pause``
        (bools), and ``why`` in words when one cannot act (see :mod:`.reach`)."""
        return self._steps.reach

    # -- the runs it saw, and comparisons ---------------------------------------------------
    @property
    def runs(self) -> tuple[RunSummary, ...]:
        """A summary of every run this debugger saw, in the order they started: each run
        of an agent it is an observer of, every run in a ``watch()`` block, every run of the
        trace it was opened on, sub-agents included (with their parent's tool call, and each
        run's totals with the runs nested under it). It shows one of them (the newest
        top-level run, or the one :meth:`show_run` picked). It keeps ``max_runs``, letting
        the oldest finished runs go (:attr:`runs_left_out`), never the run shown nor a run
        still going: while more than ``max_runs`` go on at once, it keeps more."""
        return self._runs.summaries

    @property
    def runs_left_out(self) -> int:
        """Runs seen but no longer in :attr:`runs` (finished ones, the oldest, let go past
        ``max_runs`` or ``max_run_bytes``; what a nested one spent stays in its parent's
        totals)."""
        return self._runs.left_out

    def show_run(self, run_id: str | None) -> None:
        """Show run ``run_id`` (one of :attr:`runs`, a nested run too) and keep showing it
        while other runs start; ``None`` shows the newest top-level run and follows the
        newest again. The page starts over on the run's events as this debugger kept them.
        A run it does not keep raises :class:`~toolloop_lab.errors.UnknownRunError` (a
        ``KeyError``), and nothing changes."""
        self._runs.show(run_id)

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
        return self._comparisons.compare(a, b, a_run_id=a_run_id, b_run_id=b_run_id)

    # -- fork -------------------------------------------------------------------------
    def _update_can_fork(self) -> None:
        can = self._forking.parts(self._control.agent) is not None
        if self.can_fork != can:
            self.can_fork = can

    def fork(
        self,
        at_round: int,
        *,
        config: AgentConfig | None = None,
        pause_on: PauseMode | None = None,
    ) -> LoopDebugger:
        """Fork the run shown at round ``at_round`` (as numbered here) in a new debugger,
        returned (display it), with the model, tools and ``config`` (default: its own) of
        ``fork_with`` or the agent last connected or run. It pauses where this one does (before
        each model call if it never does), and ends showing the original from ``at_round``
        on next to the fork (as :meth:`compare`). A fork that cannot be made raises
        ``ConfigurationError`` naming the field (``at_round``, ``fork_with``, ...)."""
        if pause_on is not None:
            check_mode(pause_on, f"dbg.fork({at_round!r}, pause_on={pause_on!r})")
        return self._forking.fork(self, self._control.agent, at_round, config, pause_on)

    @property
    def forks(self) -> tuple[LoopDebugger, ...]:
        """The debuggers of the forks made from this one, oldest first."""
        return tuple(self._forking.forks)

    # -- replay -----------------------------------------------------------------------
    @classmethod
    def from_trace(
        cls,
        source: Iterable[Event] | TraceRead | str | os.PathLike[str],
        *,
        run_id: str | None = None,
        **options: Any,
    ) -> LoopDebugger:
        """A debugger showing a finished run, from its events or a saved JSONL trace.

        With several runs in the source, ``run_id`` picks one; the default is the newest
        top-level run, the rule every reader shares (:func:`~toolloop_lab.events.select_run`:
        never a sub-agent while its parent is there). A run the source lacks raises
        :class:`~toolloop_lab.errors.UnknownRunError`. A replay has no step controls.
        """
        replayed = read_run(source, run_id)
        debugger = cls(**options)
        debugger.live = False
        debugger._forking.source = replayed.path
        replayed.show_in(debugger._run, run_id)
        debugger._channel.keep_saved()
        debugger._request()
        return debugger

    def export_html(
        self, path: str | os.PathLike[str], *, runs: Iterable[str] | None = None
    ) -> Path:
        """Write one self-contained HTML file showing ``runs`` (run ids of :attr:`runs`;
        every run kept by default) as this view does: the run list, and every round, call
        and message of the run a person picks, drawn by the same module. Its code, styles
        and events are inside it: it opens offline in any browser, with no kernel, no
        package and no network request, and every text in it stays text (long ones cut as
        the view cuts them, at ``max_text_chars``). Returns the path written. A run id
        this debugger does not keep raises :class:`~toolloop_lab.errors.UnknownRunError`."""
        with self._run.lock:
            session = self._run.session
            picked = chosen(session.summaries(), runs, where="this debugger")
            events = {s.run_id: tuple(session.events(s.run_id)) for s in picked}
            shown = self._run.view.run_id
            left_out, let_go = session.left_out, let_go_text(session)
        name = self._run.view.started.name if self._run.view.started else None
        return write_runs_html(
            path,
            picked,
            events,
            title=f"Agent runs: {name}" if name else "Agent runs",
            shown=shown,
            left_out=left_out,
            let_go=let_go,
            max_chars=self.max_text_chars,
        )

    # -- text, snapshot and display ---------------------------------------------------
    def summary(self) -> str:
        """A concise plain-text summary (what frontends without widgets show)."""
        return summary(self._run, self.round_offset, self.fork_info, self._forking.summary)

    def snapshot_html(self) -> str:
        """The run as static, escaped HTML (what a notebook rendered on GitHub shows)."""
        return snapshot(self._run, self.round_offset)

    def __repr__(self) -> str:
        if "_forking" not in self.__dict__:  # during construction
            return "LoopDebugger()"
        return self.summary()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text("LoopDebugger(...)" if cycle else self.summary())

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        return self._display.bundle(self)

    def _ipython_display_(self) -> None:
        """Show the widget, its static snapshot (for renderers without widgets) and, where
        "Fork from here" can act, the slot its forks are shown in (see :mod:`.display`)."""
        fork_slot = self.live or self._forking.fork_with is not None
        self._display.show(self, fork_slot)

    # -- lifecycle --------------------------------------------------------------------
    def close(self) -> None:
        """Disconnect from every agent and close the widget (its state leaves the notebook)."""
        if "_channel" in self.__dict__:  # not while it is being made
            self._control.disconnect_all()
            for child in self._forking.forks:  # forks shown below this one leave with it
                if child.task is None or child.task.done():
                    child.close()
            self._display.close()
        super().close()
