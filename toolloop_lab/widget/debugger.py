"""``LoopDebugger``: the live view of one tool-loop run, drawn in the browser (anywidget).

It is an observer (``LLMAgent(..., observers=[dbg])`` or ``dbg.attach(agent)``). Python
sends only new events, at most ``max_messages_per_second`` messages a second (see
:mod:`.coalesce` and :mod:`.wire`); the ES module ``static/debugger.js``, shipped in the
package, folds them into the view, ticks the timers of work in progress and renders every
untrusted string as DOM text. Python keeps its own fold (:class:`RunView`) for the text
summary (frontends without widgets: nbconvert, nbval, a terminal) and a static HTML
snapshot (a notebook rendered on GitHub).

Saved notebook state stays small whatever the run's length: live events are messages, not
traits; at the end of a run the newest rounds that fit in ``saved_state_bytes`` are kept
in one trait, so a notebook reopened without a kernel still shows the run.

At a pause, the browser can change the run (edit a call's arguments, answer a call by
hand, add a message, replace a result the model has not seen): each request is checked
(:mod:`.requests`) and made through the pause point (:mod:`.pausing`), and the answer, a
refusal's reason included, goes back with the next message. On a finished or replayed run,
"Fork from here" (or :meth:`LoopDebugger.fork`) re-runs the run from a round in a new
debugger, shown below this one, which compares the two when the fork ends (:mod:`.forks`).

Only the public agent API is used: ``observers``, ``subscribe``, ``add_pause_hook`` and
``arun`` (see :class:`DebuggableAgent`); the loop itself never imports this package.
Observers may be called from any thread (a change made from the kernel's thread emits its
event there), so everything the observer touches is guarded by one lock.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, TypeVar

import anywidget
import comm
import ipywidgets
import traitlets
from langchain_core.tools import BaseTool

from toolloop_lab.agent import AgentConfig
from toolloop_lab.errors import ConfigurationError, ToolLoopLabError, describe
from toolloop_lab.events import Event, LoopFailed, LoopFinished, LoopStarted, Observer, select_run
from toolloop_lab.forking import Fork, ForkResult, prepare_fork
from toolloop_lab.hooks import PauseHook, PausePoint
from toolloop_lab.pricing import PriceTable
from toolloop_lab.runview import RunView
from toolloop_lab.trace import TraceRead, read_trace
from toolloop_lab.widget.coalesce import Clock, Coalescer, Scheduler, loop_scheduler
from toolloop_lab.widget.forks import ForkParts, comparison, fork_parts
from toolloop_lab.widget.pausing import apply_request, point_dict
from toolloop_lab.widget.requests import Answer, ForkHere, parse_request
from toolloop_lab.widget.snapshot import snapshot_html
from toolloop_lab.widget.step import PAUSE_MODES, PauseMode, StepController
from toolloop_lab.widget.text import summary_text
from toolloop_lab.widget.wire import MAX_BATCH_EVENTS, clip, event_payload, saved_tail

if TYPE_CHECKING:
    from toolloop_lab.bridge import EventBridge

__all__ = ["DebuggableAgent", "LoopDebugger"]

R_co = TypeVar("R_co", covariant=True)
R = TypeVar("R")

STATIC: Final = Path(__file__).with_name("static")
"""The front end: ``debugger.js`` (an ES module) and ``debugger.css``, shipped as files."""


class DebuggableAgent(Protocol[R_co]):
    """The public agent API the debugger needs (``LLMAgent`` has it)."""

    @property
    def observers(self) -> tuple[Observer, ...]: ...

    def subscribe(self, callback: Observer) -> Callable[[], None]: ...

    def add_pause_hook(self, hook: PauseHook) -> Callable[[], None]: ...

    async def arun(self, prompt_or_messages: str | Sequence[Any]) -> R_co: ...


def _cell_of_request() -> tuple[str, str] | None:
    """The notebook cell and the execute request being run now, when a front end says
    (JupyterLab and Notebook 7 put ``cellId`` in the request's metadata)."""
    try:
        from IPython.core.getipython import get_ipython

        getter: Any = get_ipython  # typed in some IPython releases, not in others
        shell: Any = getter()
        kernel = getattr(shell, "kernel", None)
        parent = kernel.get_parent() if kernel is not None else None
    except Exception:  # noqa: BLE001 - no IPython, no kernel: nothing to tell
        return None
    if not isinstance(parent, dict):
        return None
    cell = (parent.get("metadata") or {}).get("cellId")
    msg_id = (parent.get("header") or {}).get("msg_id")
    if isinstance(cell, str) and isinstance(msg_id, str):
        return cell, msg_id
    return None


def _check_mode(mode: object) -> None:
    if mode not in PAUSE_MODES:
        raise ValueError(f"pause_on must be one of {', '.join(PAUSE_MODES)}; got {mode!r}")


class _SnapshotSlot(anywidget.AnyWidget):
    """An invisible widget that holds the output slot of the static snapshot.

    The snapshot output carries this widget's view and the snapshot's ``text/html``: a
    widget front end shows the (empty) widget, a renderer without widgets (GitHub) shows
    the HTML. Updating that output at the end of a run re-renders this empty widget only,
    never the debugger's own view.
    """

    _esm = "export default { render({ el }) { el.hidden = true; } };"


class LoopDebugger(anywidget.AnyWidget):
    """Live debugger for one tool-loop run: display it, then run the agent.

    ``fork_with`` is the agent "Fork from here" runs a fork with (its model, tools and
    config); without it, the agent this debugger last ran or watched.
    """

    _esm = STATIC / "debugger.js"
    _css = STATIC / "debugger.css"

    live = traitlets.Bool(True).tag(sync=True)
    """True when Continue, Step and Stop can act (a replay has nothing to step)."""
    _pause_on = traitlets.Unicode("off").tag(sync=True)
    saved_events: traitlets.List[Any] = traitlets.List().tag(sync=True)
    """The newest rounds of the last finished run, kept in the notebook file."""
    saved_omitted = traitlets.Int(0).tag(sync=True)
    """Rounds of that run left out of ``saved_events`` (they are in the trace)."""
    can_fork = traitlets.Bool(False).tag(sync=True)
    """True when "Fork from here" can act: the debugger knows an agent to fork with."""
    round_offset = traitlets.Int(0).tag(sync=True)
    """Added to every round number shown: a fork's rounds read as the original's."""
    fork_info: traitlets.Dict[str, Any] = traitlets.Dict().tag(sync=True)
    """For a fork's debugger: where it was forked, and the comparison once it ended."""

    _displayed: ClassVar[dict[str, tuple[str, weakref.ref[LoopDebugger]]]] = {}
    """Cell id -> (execute request, debugger) of the last debugger each cell displayed."""

    def __init__(
        self,
        *,
        max_text_chars: int = 20_000,
        max_messages_per_second: float = 10.0,
        saved_state_bytes: int = 256_000,
        pause_on: PauseMode = "off",
        fork_with: DebuggableAgent[Any] | None = None,
        clock: Clock = time.monotonic,
        schedule: Scheduler = loop_scheduler,
    ) -> None:
        if max_text_chars < 1 or saved_state_bytes < 1:
            raise ValueError("max_text_chars and saved_state_bytes must be >= 1")
        _check_mode(pause_on)
        super().__init__()
        self.max_text_chars = max_text_chars
        self.saved_state_bytes = saved_state_bytes
        self._lock = threading.RLock()
        self._clock = clock
        self._epoch = 0
        self._clear_run()
        self._save_pending = False
        self._frontend = False
        self._display_id = uuid.uuid4().hex
        self._slot: _SnapshotSlot | None = None
        self._task: asyncio.Task[Any] | None = None
        self._detachers: dict[int, Callable[[], None]] = {}
        self._fork_with = fork_with
        self._agent: DebuggableAgent[Any] | None = None
        self._source: str | os.PathLike[str] | None = None
        self._answer: dict[str, Any] | None = None
        self._fork_area: ipywidgets.Output | None = None
        self._forks: list[LoopDebugger] = []
        self._fork_summary: str | None = None
        self._comparison_offset = 0
        self._controller = StepController(
            mode=pause_on, on_pause=self._on_pause, on_resume=self._on_resume
        )
        # 1% slower than asked, so drift between the pacing clock (monotonic) and the wall
        # clock that stamps kernel messages never shows max + 1 messages in one second
        self._pacer = Coalescer(
            self._flush,
            max_per_second=max_messages_per_second * 0.99,
            clock=clock,
            schedule=schedule,
        )
        self._pause_on = pause_on
        self._update_can_fork()
        self.observe(self._on_pause_trait, names="_pause_on")
        self.on_msg(self._on_frontend_msg)

    def _reset(self) -> None:
        with self._lock:
            self._clear_run()
            self._epoch += 1

    def _clear_run(self) -> None:
        """Forget the run shown: its fold, its events and what was sent of them."""
        self._view = RunView()
        self._events: list[Event] = []
        self._sent = 0
        self._zero: float | None = None
        self._paused_since: float | None = None
        """Run time the loop began to wait at the pause it waits at now (for the page's
        live paused segment; the ``pause`` event that ends it gives the exact time)."""
        self._note: str | None = None
        self._last_event: Event | None = None
        self._stopped_by_user = False

    # -- observer ---------------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        """Fold one event in and queue it for the browser (sent in paced batches)."""
        if not self._apply(event):
            return
        if isinstance(event, (LoopFinished, LoopFailed)):
            self._save_pending = True  # sent in its own paced slot, after the last batch
        self._request()

    def _apply(self, event: Event) -> bool:
        with self._lock:
            if event is self._last_event:  # attached twice: never count an event twice
                return False
            self._last_event = event
            view = self._view
            if (
                isinstance(event, LoopStarted)
                and view.run_id not in (None, event.run_id)
                and (view.done or view.status == "idle")
            ):
                self._reset()
                view = self._view
            if view.run_id is not None and event.run_id != view.run_id:
                return False  # another run (a nested agent, say): not this view's
            view.apply(event)
            if self._zero is None:
                self._zero = self._clock() - event.t
            self._events.append(event)
            return True

    # -- sending ----------------------------------------------------------------------
    def _request(self) -> None:
        """Ask for a send at the paced rate; send at once when no timer can be armed."""
        pacer = self._pacer
        pacer.request()
        if pacer.dirty and not pacer.armed:
            pacer.flush()

    def _silent(self) -> bool:
        """True when no front end can ever receive a message (no kernel, or closed)."""
        channel = getattr(self, "comm", None)
        return channel is None or isinstance(channel, comm.DummyComm)

    def _control(self) -> dict[str, Any]:
        task = self._task
        controller = self._controller
        return {
            "paused_at": point_dict(controller.paused_at, controller.pauses, self.max_text_chars),
            "paused_since": self._paused_since if controller.paused_at is not None else None,
            "running": task is not None and not task.done(),
            "note": self._note,
            "stopped_by_user": self._stopped_by_user,
            "answer": self._answer,
        }

    def _flush(self) -> None:
        """One message: the next batch of events, else the saved state of a finished run,
        else the step state alone (a pause, a resume)."""
        with self._lock:
            if self._sent >= len(self._events) and self._save_pending:
                self._save_pending = False
                self._keep_saved()
                return
            if self._silent():
                return
            first = self._sent
            batch = self._events[first : first + MAX_BATCH_EVENTS]
            self._sent = first + len(batch)
            done = self._view.done
            now = None if done or self._zero is None else self._clock() - self._zero
            message = {
                "type": "events",
                "epoch": self._epoch,
                "first": first,
                "reset": first == 0,
                "events": [event_payload(e, self.max_text_chars) for e in batch],
                "now": now,
                "control": self._control(),
            }
            more = self._sent < len(self._events) or self._save_pending
        self.send(message)
        if more:
            self._request()

    def flush(self) -> None:
        """Send whatever is pending now, ignoring the pace (tests, the end of a script)."""
        self._pacer.flush()

    def _on_frontend_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind == "hello":  # a new page or view: send everything again, from the start
            with self._lock:
                self._frontend = True
                self._sent = 0
                self._answer = None  # answers were for the requests of an earlier page
            self._request()
        elif kind == "control":
            self._on_control(content)
        elif kind in ("intervene", "fork"):
            try:
                answer = self._carry_out(content)
            except Exception as exc:  # noqa: BLE001 - a click must never raise in the kernel
                action = content.get("action")
                answer = Answer(
                    None,
                    action if isinstance(action, str) else str(kind),
                    False,
                    "failed",
                    f"{type(exc).__name__}: {describe(exc)}",
                )
            self._reply(answer)

    def _on_control(self, content: dict[Any, Any]) -> None:
        """Continue, Step or Stop from the browser. A Continue or Step that names the pause
        it was clicked at (``pause``) acts only while the loop still waits there: a double
        click or a late message never releases a later pause."""
        action = content.get("action")
        if action == "stop":
            self.stop()
            return
        if action not in ("continue", "step"):
            return
        pause = content.get("pause")
        at = pause if isinstance(pause, int) and not isinstance(pause, bool) else None
        if action == "step":
            self._controller.step(at=at)
        elif self._controller.continue_(at=at):
            self._request()

    def _carry_out(self, content: dict[Any, Any]) -> Answer:
        """Check a request from the browser, then act on it; refusals are answers."""
        request = parse_request(content)
        if isinstance(request, Answer):
            return request
        if isinstance(request, ForkHere):
            return self._fork_from_browser(request)
        point = self._controller.paused_at
        if point is None:
            return Answer(request.request, request.action, False, "not_paused", "not paused")
        if request.pause != self._controller.pauses:
            return Answer(
                request.request,
                request.action,
                False,
                "stale",
                "the run has moved on to another pause since",
            )
        return apply_request(point, request, self._tool_named)

    def _reply(self, answer: Answer) -> None:
        """Send the answer to a request with the next message (with the step state)."""
        with self._lock:
            self._answer = answer.to_dict()
        self._request()

    def _tool_named(self, name: str) -> BaseTool | None:
        agent = self._agent
        tools = getattr(getattr(agent, "agent", agent), "tools", ())
        return next((t for t in tools if isinstance(t, BaseTool) and t.name == name), None)

    def _keep_saved(self) -> None:
        """Keep the end of the finished run in the saved notebook state (bounded)."""
        with self._lock:
            events = list(self._events)
        saved, omitted = saved_tail(events, self.max_text_chars, self.saved_state_bytes)
        with self.hold_sync():
            self.saved_events = saved
            self.saved_omitted = omitted
        if self._frontend:
            self._update_display()

    # -- wiring -----------------------------------------------------------------------
    def attach(self, agent: DebuggableAgent[Any]) -> Callable[[], None]:
        """Feed this view from ``agent``'s runs (and hold them in step mode); returns detach."""
        key = id(agent)
        existing = self._detachers.get(key)
        if existing is not None:
            return existing
        removers: list[Callable[[], None]] = []
        if not any(o is self for o in agent.observers):
            removers.append(agent.subscribe(self))
        removers.append(agent.add_pause_hook(self._controller))

        def detach() -> None:
            for remove in removers:
                remove()
            removers.clear()
            self._detachers.pop(key, None)

        self._detachers[key] = detach
        self._agent = agent
        self._update_can_fork()
        return detach

    def start(self, agent: DebuggableAgent[R], prompt: str | Sequence[Any]) -> asyncio.Task[R]:
        """Run ``agent`` on ``prompt`` as a background task on the running event loop.

        The kernel stays responsive, so Continue, Step and Stop work during the run; the
        task's result (or exception) is there afterwards: ``await task`` or
        ``task.result()``.
        """
        if self._task is not None and not self._task.done():
            raise RuntimeError("a run is already in progress: stop() it or wait for it")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "start() needs a running event loop (a notebook cell has one); elsewhere "
                "attach the debugger and `await agent.arun(...)`"
            ) from None
        temporary = id(agent) not in self._detachers
        detach = self.attach(agent)
        self._reset()
        self.live = True
        self._agent = agent  # kept after a temporary attach: a fork of this run needs it
        self._source = None
        self._update_can_fork()
        task: asyncio.Task[R] = loop.create_task(agent.arun(prompt), name="toolloop-debugger-run")
        self._task = task
        self._controller.arm(task)

        def done(finished: asyncio.Task[R]) -> None:
            if temporary:
                detach()
            if self._task is finished:  # a newer start() keeps its own arming
                self._controller.arm(None)
            if finished.cancelled():
                if self._view.status in ("idle", "running", "paused"):
                    self._note = "the run was stopped"
            else:
                exc = finished.exception()  # marks it retrieved; the task still raises it
                if exc is not None and self._view.failure is None:
                    self._note = f"the run raised {type(exc).__name__}: {describe(exc)}"
                elif isinstance(result := finished.result(), ForkResult):
                    self._show_comparison(result)
            self._request()

        task.add_done_callback(done)
        self._request()
        return task

    @property
    def task(self) -> asyncio.Task[Any] | None:
        """The task of the last :meth:`start`, if any."""
        return self._task

    # -- step mode --------------------------------------------------------------------
    @property
    def pause_on(self) -> PauseMode:
        """Where step mode pauses a run started with :meth:`start`."""
        return self._controller.mode

    @pause_on.setter
    def pause_on(self, mode: PauseMode) -> None:
        _check_mode(mode)
        self._controller.mode = mode
        if self._pause_on != mode:
            self._pause_on = mode

    def _on_pause_trait(self, change: dict[str, Any]) -> None:
        new = change["new"]
        if new in PAUSE_MODES:
            self._controller.mode = new
        else:  # a front end sent something else: keep the mode, show it again
            self._pause_on = self._controller.mode

    @property
    def paused_at(self) -> PausePoint | None:
        """Where the loop waits right now, if it does."""
        return self._controller.paused_at

    def _on_pause(self, point: PausePoint) -> None:
        with self._lock:
            self._view.pause(point)
            zero = self._zero
            self._paused_since = None if zero is None else max(self._clock() - zero, 0.0)
        self._request()

    def _on_resume(self) -> None:
        with self._lock:
            self._view.resume()
            self._paused_since = None
        self._request()

    def step(self) -> bool:
        """Let the paused loop go on to the next pause point; False, and nothing
        changes, when the run is not paused."""
        return self._controller.step()

    def continue_(self) -> bool:
        """Let this run go on to its end without pausing (the next run pauses again);
        False, and nothing changes, when the run is not paused."""
        released = self._controller.continue_()
        self._request()
        return released

    def stop(self) -> bool:
        """Cancel the run cleanly; the view then shows the partial counts, as stopped."""
        task = self._task
        if task is not None and not task.done():
            self._stopped_by_user = True
            loop = task.get_loop()
            try:
                same = asyncio.get_running_loop() is loop
            except RuntimeError:
                same = False
            if same:
                task.cancel()
            else:
                loop.call_soon_threadsafe(task.cancel)
            return True
        stopped = self._controller.stop()
        if stopped:
            self._stopped_by_user = True
        return stopped

    # -- figures for Python-side readers ----------------------------------------------
    @property
    def events(self) -> tuple[Event, ...]:
        """The events of the run shown, in the order they came."""
        with self._lock:
            return tuple(self._events)

    @property
    def view(self) -> RunView:
        """The fold of the events seen so far (read it, do not change it)."""
        return self._view

    @property
    def draws(self) -> int:
        """Messages sent (or that would have been, headless) so far."""
        return self._pacer.draws

    @property
    def redraw_requests(self) -> int:
        """Sends asked for so far (one per event, plus pauses and clicks)."""
        return self._pacer.requests

    def redraw(self) -> None:
        """Send the pending state now."""
        self._pacer.force()

    # -- LangChain and LangGraph runs (the bridge) ---------------------------------------
    def watch(
        self, *observers: Observer, prices: PriceTable | None = None
    ) -> AbstractContextManager[EventBridge]:
        """Show every LangChain or LangGraph run started inside the block (``with
        dbg.watch(): graph.invoke(...)``); ``observers`` (a ``TraceWriter``, say) get the
        same events. See :func:`toolloop_lab.bridge.watch`."""
        from toolloop_lab.bridge import watch

        return watch(self, *observers, prices=prices)

    def callbacks(self, *observers: Observer, prices: PriceTable | None = None) -> EventBridge:
        """A callback handler showing the runs it is passed to here (``graph.invoke(inputs,
        config={"callbacks": [dbg.callbacks()]})``). See :func:`toolloop_lab.bridge.callbacks`."""
        from toolloop_lab.bridge import callbacks

        return callbacks(self, *observers, prices=prices)

    # -- fork -------------------------------------------------------------------------
    def _fork_parts(self) -> ForkParts | None:
        """What a fork runs with: ``fork_with``'s, else the agent last run or watched."""
        return fork_parts(self._fork_with if self._fork_with is not None else self._agent)

    def _update_can_fork(self) -> None:
        can = self._fork_parts() is not None
        if self.can_fork != can:
            self.can_fork = can

    def fork(
        self,
        at_round: int,
        *,
        config: AgentConfig | None = None,
        pause_on: PauseMode | None = None,
    ) -> LoopDebugger:
        """Fork the run shown here at round ``at_round`` (as the rounds are numbered in
        this view) and start the fork in a new debugger, which is returned (display it).

        The fork runs with ``fork_with`` (or the agent this debugger last ran or watched):
        its model, tools and ``config`` (default: that agent's). It pauses where this
        debugger pauses, and before every model call when this one never pauses, so the
        person forking can change the fork's first call. When it ends, the new debugger
        shows the two runs side by side. A fork that cannot be made raises
        :class:`~toolloop_lab.errors.ConfigurationError` naming the field (``at_round``,
        ``tool_max_rounds``, ``fork_with``, ...) and starts nothing.
        """
        view = self._view
        if not view.done:
            raise ConfigurationError(
                "only a finished (or replayed) run can be forked", field="source"
            )
        parts = self._fork_parts()
        if parts is None:
            raise ConfigurationError(
                "this debugger knows no agent to fork with: give one, as in "
                "LoopDebugger.from_trace(path, fork_with=agent)",
                field="fork_with",
            )
        own = at_round - self.round_offset if type(at_round) is int else at_round
        with self._lock:
            source: Any = self._source if self._source is not None else tuple(self._events)
        prepared = prepare_fork(
            source,
            own,
            model=parts.model,
            tools=parts.tools,
            config=config if config is not None else parts.config,
            pruning_model=parts.pruning_model,
            prices=parts.prices,
            run_id=view.run_id,
        )
        child = self._fork_debugger(prepared, pause_on)
        child.start(prepared, ())
        self._forks.append(child)
        return child

    def _fork_debugger(self, prepared: Fork, pause_on: PauseMode | None) -> LoopDebugger:
        """The debugger a fork runs in: it numbers rounds as this one does, and pauses
        where this one pauses (before every model call when this one never pauses)."""
        mode: PauseMode = pause_on or (self.pause_on if self.pause_on != "off" else "model")
        child = LoopDebugger(
            max_text_chars=self.max_text_chars,
            saved_state_bytes=self.saved_state_bytes,
            pause_on=mode,
            fork_with=self._fork_with,
        )
        child.round_offset = self.round_offset + prepared.at_round - 1
        child.fork_info = {
            "at_round": prepared.at_round + self.round_offset,
            "source": prepared.source,
            "comparison": None,
        }
        child._comparison_offset = self.round_offset
        return child

    @property
    def forks(self) -> tuple[LoopDebugger, ...]:
        """The debuggers of the forks made from this one, oldest first."""
        return tuple(self._forks)

    def _show_comparison(self, result: ForkResult) -> None:
        data = comparison(result, self._comparison_offset)
        self._fork_summary = result.summary
        self.fork_info = {**self.fork_info, "comparison": clip(data, self.max_text_chars)}

    def _fork_from_browser(self, request: ForkHere) -> Answer:
        try:
            child = self.fork(request.round + self.round_offset)
        except ToolLoopLabError as exc:  # a ConfigurationError names its field
            reason = getattr(exc, "field", None) or type(exc).__name__
            return Answer(request.request, "fork", False, str(reason), describe(exc))
        except RuntimeError as exc:  # no running event loop: start() says why
            return Answer(request.request, "fork", False, "no_event_loop", describe(exc))
        area = self._fork_area
        if area is None:  # this debugger was shown some other way (inside a box, say)
            where = f"the fork runs; display it with dbg.forks[{len(self._forks) - 1}]"
            return Answer(request.request, "fork", True, message=where)
        from IPython import display

        show: Any = display.display
        with area:  # the click's own output would go nowhere a person looks
            show(child)
        return Answer(
            request.request, "fork", True, message="the fork runs in a new debugger below this one"
        )

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
        :class:`~toolloop_lab.errors.UnknownRunError`. A replay has no step controls:
        there is nothing to step.
        """
        note = None
        path = source if isinstance(source, (str, os.PathLike)) else None
        if isinstance(source, (str, os.PathLike)):
            source = read_trace(source)
        if isinstance(source, TraceRead):
            events: Sequence[Event] = source.run(run_id)
            if source.skipped:
                note = f"{len(source.skipped)} unreadable trace line(s) skipped"
                if source.partial_line is not None:
                    note += " (a partial last line: the writer stopped mid-run)"
        else:
            events = select_run(source, run_id)
        debugger = cls(**options)
        debugger.live = False
        debugger._source = path
        for event in events:
            debugger._apply(event)
        debugger._keep_saved()
        if note:
            debugger._note = note if debugger._note is None else f"{note}; {debugger._note}"
        debugger._request()
        return debugger

    # -- text, snapshot and display ---------------------------------------------------
    def summary(self) -> str:
        """A concise plain-text summary (what frontends without widgets show)."""
        with self._lock:
            text = summary_text(self._view, note=self._note, round_offset=self.round_offset)
            if self.fork_info:
                at = self.fork_info.get("at_round")
                text += f"\nfork of round {at}; rounds are numbered as in the original"
            if self._fork_summary is not None:
                text += "\n" + self._fork_summary
            return text

    def snapshot_html(self) -> str:
        """The run as static, escaped HTML (what a notebook rendered on GitHub shows)."""
        with self._lock:
            return snapshot_html(self._view, note=self._note, round_offset=self.round_offset)

    def __repr__(self) -> str:
        if "_view" not in self.__dict__:  # during construction
            return "LoopDebugger()"
        return self.summary()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text("LoopDebugger(...)" if cycle else self.summary())

    def _bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        bundle = super()._repr_mimebundle_()
        data, metadata = bundle if bundle is not None else ({}, {})
        data = dict(data)
        data["text/plain"] = self.summary()
        return data, dict(metadata or {})

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        return self._bundle()

    def _snapshot_bundle(self) -> dict[str, Any]:
        if self._slot is None:
            self._slot = _SnapshotSlot()
        slot = self._slot._repr_mimebundle_()
        data = dict(slot[0]) if slot is not None else {}
        data.pop("text/plain", None)
        data["text/html"] = self.snapshot_html()
        return data

    def _ipython_display_(self) -> None:
        """Show the widget, then the static snapshot as a second output with a display id
        (updated at the end of each run a widget front end watched, so a saved notebook
        rendered without widgets shows the run); close the debugger an earlier run of the
        same cell displayed (its state would stay in the notebook file)."""
        from IPython import display

        self._forget_earlier_in_cell()
        data, metadata = self._bundle()
        show: Any = display.display
        show(data, raw=True, metadata=metadata)
        show(self._snapshot_bundle(), raw=True, display_id=self._display_id)
        if self.live or self._fork_with is not None:  # where "Fork from here" shows a fork
            if self._fork_area is None:
                self._fork_area = ipywidgets.Output()
            area = self._fork_area._repr_mimebundle_()
            view = dict(area[0] if isinstance(area, tuple) else area or {})
            view.pop("text/plain", None)  # an empty slot: nothing to read without widgets
            show(view, raw=True)

    def _update_display(self) -> None:
        if self._slot is None:
            return
        from IPython import display

        update: Any = display.update_display
        update(self._snapshot_bundle(), raw=True, display_id=self._display_id)

    def _forget_earlier_in_cell(self) -> None:
        where = _cell_of_request()
        if where is None:
            return
        cell, request = where
        known = LoopDebugger._displayed.get(cell)
        LoopDebugger._displayed[cell] = (request, weakref.ref(self))
        if known is None or known[0] == request:
            return
        old = known[1]()
        if old is None or old is self or old.comm is None:
            return
        running = old._task is not None and not old._task.done()
        if not running:
            old.close()

    # -- lifecycle --------------------------------------------------------------------
    def close(self) -> None:
        """Detach from every agent and close the widget (its state leaves the notebook)."""
        for detach in list(self._detachers.values()):
            detach()
        if self._slot is not None:
            self._slot.close()
        for child in self._forks:  # forks shown below this one leave with it, once done
            if child.task is None or child.task.done():
                child.close()
        if self._fork_area is not None:
            self._fork_area.close()
        super().close()
