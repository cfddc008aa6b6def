"""``LoopDebugger``: the live view of one tool-loop run, drawn in the browser (anywidget).

It is an observer: given where a run takes observers (``LLMAgent(model, tools,
observers=[dbg])``), it connects to the agent (its step hook, the agent kept for Stop and
forks: :class:`~toolloop_lab._engine.hooks.ConnectsToAgent`) and folds
each event into the run it shows (:mod:`.shown`) and the ES module ``static/debugger.js``,
shipped in the package, folds the same events in the browser, ticks the timers of work in
progress and renders every untrusted string as DOM text. The class holds the traits the
page syncs and hands each job to a collaborator, one module each:

* :mod:`.channel`: the link to the browser (paced batches, a page's hello, answers, the
  saved notebook state of a finished run);
* :mod:`.control`: step control (pause, Continue, Step, Stop, the changes a person makes
  at a pause), with :mod:`.holding` and :mod:`.reach` (which runs the clicks reach);
* :mod:`.forks`: "Fork from here" (:meth:`LoopDebugger.fork`);
* :mod:`.comparisons`: two runs side by side (:meth:`LoopDebugger.compare`, a fork's end);
* :mod:`.runlist`: every run it saw (:attr:`LoopDebugger.runs`) and the one it shows
  (:meth:`LoopDebugger.show_run`);
* :mod:`.construct`: a finished run from its events or a trace (:meth:`from_trace`);
* :mod:`.display`: the widget's outputs, its static snapshot and its text.

The loop itself never imports this package. Observers may be called from any thread (a
change made from the kernel's thread emits its event there), so everything the observer
touches is guarded by one lock (the shown run's).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import comm

from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._replay.fork import Fork
from toolloop_lab._replay.fork.compare import ForkResult
from toolloop_lab._runview import RunView
from toolloop_lab._trace import TraceRead
from toolloop_lab._widget.channel import Channel, Endpoints
from toolloop_lab._widget.coalesce import Clock, Scheduler, loop_scheduler
from toolloop_lab._widget.comparisons import Comparisons
from toolloop_lab._widget.construct import read_run
from toolloop_lab._widget.control import Control, DebuggableAgent
from toolloop_lab._widget.display import Display, snapshot, summary
from toolloop_lab._widget.forks import Forking
from toolloop_lab._widget.options import check_limits, check_mode
from toolloop_lab._widget.requests import Answer
from toolloop_lab._widget.runlist import RunList
from toolloop_lab._widget.session import MAX_RUNS
from toolloop_lab._widget.shown import ShownRun
from toolloop_lab._widget.step import PauseMode
from toolloop_lab._widget.stepping import StepMode
from toolloop_lab._widget.synced import SyncedState
from toolloop_lab.events import Event, LoopFailed, LoopFinished

if TYPE_CHECKING:
    pass

R = TypeVar("R")

STATIC: Final = Path(__file__).with_name("static")
"""The front end: ``debugger.js`` (an ES module) and ``debugger.css``, shipped as files."""


class LoopDebugger(RunList, Comparisons, StepMode, SyncedState):
    """Live debugger for one tool-loop run: display it, then run the agent.

    ``fork_with`` is the agent "Fork from here" runs a fork with (its model, tools and
    config); without it, the agent this debugger last ran or watched. It shows one run
    and keeps a summary of every run it sees (:attr:`runs`), ``max_runs`` of them (more
    while more are going at once: the run shown and runs still going are never let go).
    """

    def __init__(
        self,
        *,
        max_text_chars: int = 20_000,
        max_messages_per_second: float = 10.0,
        saved_state_bytes: int = 256_000,
        pause_on: PauseMode = "off",
        fork_with: DebuggableAgent[Any] | None = None,
        max_runs: int = MAX_RUNS,
        clock: Clock = time.monotonic,
        schedule: Scheduler = loop_scheduler,
    ) -> None:
        check_limits(
            max_text_chars=max_text_chars,
            saved_state_bytes=saved_state_bytes,
            max_runs=max_runs,
            max_messages_per_second=max_messages_per_second,
        )
        check_mode(pause_on, f"LoopDebugger(pause_on={pause_on!r})")
        super().__init__()
        try:
            self._build(max_text_chars, saved_state_bytes, pause_on, fork_with, max_runs, clock)
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
        max_runs: int,
        clock: Clock,
    ) -> None:
        """The run shown, forks, outputs and step control (nothing the page sees yet)."""
        self.max_text_chars = max_text_chars
        self.saved_state_bytes = saved_state_bytes
        self._run = ShownRun(clock, max_runs)
        self._forking = Forking(fork_with)
        self._display = Display()
        self._control = Control(self._run, pause_on, self._request, self._on_result)

    def _connect(self, max_messages_per_second: float, schedule: Scheduler) -> None:
        """The channel to the page, and the traits that follow step mode."""
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
        self._pause_on = self._control.steps.mode
        self._update_can_fork()
        self.observe(self._on_pause_trait, names="_pause_on")
        self.on_msg(lambda _widget, content, _buffers: self._on_page(content))

    # -- observer ---------------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        """Fold one event in and queue it for the browser (sent in paced batches)."""
        if self._run.add(event) == "seen":
            return
        self._control.observed(event)
        if isinstance(event, (LoopFinished, LoopFailed)):
            self._channel.finished()
            if not self._channel.frontend:  # a notebook runner: the output, while it looks
                self._display.update(self, False)
        else:
            self._request()

    def _request(self) -> None:
        self._channel.request()

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
            return self._show_asked(content)
        if content.get("type") == "compare":
            return self._compare_request(content)
        return self._control.carry_out(
            content,
            lambda request: self._forking.from_browser(
                self, request, self._control.agent, self._display.fork_area
            ),
        )

    def flush(self) -> None:
        """Send whatever is pending now, ignoring the pace (tests, the end of a script)."""
        self._channel.pacer.flush()

    # -- wiring -----------------------------------------------------------------------
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
        keep it). A :class:`~toolloop_lab._replay.fork.Fork` is shown with its rounds numbered
        as its source's."""
        if pause_on is not None:
            self._set_mode(check_mode(pause_on, f"dbg.start(..., pause_on={pause_on!r})"))
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
        ``fork_with`` or the agent last run or watched. It pauses where this one does (before
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
