"""The debugger's step control: the run it started, its pauses, and what a person does there.

:meth:`Control.start` runs an agent as a background task on the running event loop, so the
kernel stays responsive and Continue, Step and Stop work during the run. The
:class:`~.steps.StepController` holds that task (never a run awaited in a cell, which would
wait forever) where the pause mode says. At a pause, the browser can change the run: each
request is checked and made through the pause point (:mod:`.requests`).

Only the public agent API is used: ``observers``, ``subscribe``, ``add_pause_hook`` and
``arun`` (see :class:`DebuggableAgent`).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from langchain_core.tools import BaseTool

from toolloop_lab._engine.hooks import PauseHook, PausePoint
from toolloop_lab._support.errortext import explain
from toolloop_lab._support.words import outcome_text
from toolloop_lab._widget.reach import Holder
from toolloop_lab._widget.requests import (
    Answer,
    Change,
    ForkHere,
    Release,
    StopRun,
    apply_request,
    parse_control,
    parse_request,
    point_dict,
)
from toolloop_lab._widget.shown import ShownRun
from toolloop_lab._widget.steps import PauseMode, PauseWaiters, StepController
from toolloop_lab.events import Event, LoopFailed, LoopFinished, LoopStarted, Observer

R_co = TypeVar("R_co", covariant=True)
R = TypeVar("R")


class DebuggableAgent(Protocol[R_co]):
    """The public agent API the debugger needs (``LLMAgent`` has it)."""

    @property
    def observers(self) -> tuple[Observer, ...]: ...

    def subscribe(self, callback: Observer) -> Callable[[], None]: ...

    def add_pause_hook(self, hook: PauseHook) -> Callable[[], None]: ...

    async def arun(self, prompt_or_messages: str | Sequence[Any]) -> R_co: ...


def _ref(agent: object) -> Callable[[], object]:
    """A weak reference to ``agent`` where it takes one, else a strong one."""
    try:
        return weakref.ref(agent)
    except TypeError:  # a class with __slots__ and no __weakref__
        return lambda: agent


class Control:
    """The task a debugger started, the agents it is connected to, and its step mode.

    ``request`` asks the channel for a send (the page shows every change of step state);
    ``on_result`` is given the result of every run :meth:`start` made that ended well.
    """

    def __init__(
        self,
        run: ShownRun,
        mode: PauseMode,
        request: Callable[[], None],
        on_result: Callable[[object], None],
    ) -> None:
        self._run = run
        self._request = request
        self._on_result = on_result
        self.steps = StepController(mode=mode, on_pause=self._paused, on_resume=self._resumed)
        self.holder = Holder(self.steps)
        """The run the controls hold when this debugger did not start it, and their reach."""
        self.task: asyncio.Task[Any] | None = None
        """The task of the last :meth:`start`, if any."""
        self.agent: DebuggableAgent[Any] | None = None
        """The agent last connected or run (its tools answer calls by hand; forks run with
        it)."""
        self._connections: dict[int, tuple[Callable[[], object], Callable[[], None]]] = {}
        """Each connected agent (weakly, by its id) and its disconnect."""
        self.waiters = PauseWaiters()
        """Who awaits the next pause (``dbg.next_pause()``)."""

    def _paused(self, point: PausePoint) -> None:
        self._run.paused(point)
        self.waiters.paused(point)
        self._request()

    def why_no_pause(self) -> str | None:
        """Why no pause can come now (no run goes on, or it will not pause again), with
        what to do; ``None`` when one may."""
        steps = self.steps
        if not (self.running() or self.holder.running()):
            return (
                "no run this debugger can pause is going on: start one with "
                "dbg.start(agent, prompt, pause_on='model') (or 'tools', 'both')"
            )
        if steps.continued:
            return (
                "Continue let this run go on to its end without pausing again: "
                "await dbg.task for its result"
            )
        if steps.mode == "off":
            return (
                "pause_on is 'off', so this run will not pause: set dbg.pause_on = 'model' "
                "(or 'tools', 'both'), or start with dbg.start(agent, prompt, pause_on=...)"
            )
        return None

    def _resumed(self) -> None:
        self._run.resumed()
        self._request()

    def running(self) -> bool:
        """True while the task of the last :meth:`start` runs."""
        task = self.task
        return task is not None and not task.done()

    def observed(self, event: Event) -> None:
        """An event of the run shown: at its start, what can the controls do for it (see
        :mod:`.reach`); at its end, it is held no more."""
        if isinstance(event, LoopStarted):
            self.holder.started(event, own=self.task)
        elif isinstance(event, (LoopFinished, LoopFailed)):
            self.holder.ended(event.run_id)
            if self._run.shows(event.run_id):  # not a sub-agent's end
                said = outcome_text(event.outcome)
                self.waiters.ended(f"the run ended without pausing again ({said})")

    def _connected_event(self, event: Event) -> None:
        """Every event of a connected agent's runs: its run's agent holds the step hook.
        Called after the debugger's own observer (the agent's observers are in the order
        given, and connecting comes after the debugger is one), so the run shown, which
        the holder first judged as not connected, is decided again."""
        if isinstance(event, LoopStarted):
            self.holder.connected(event.run_id)
            if self._run.shows(event.run_id):
                self.holder.started(event, own=self.task)
                self._request()

    def state(self, max_text_chars: int) -> dict[str, Any]:
        """The step state a page shows: where the loop waits, since when, whether it runs,
        and whether Continue let this run go on without pausing again."""
        steps, run = self.steps, self._run
        return {
            "paused_at": point_dict(steps.paused_at, steps.pauses, max_text_chars),
            "paused_since": run.paused_since if steps.paused_at is not None else None,
            "running": self.running() or self.holder.running(),
            "note": run.note,
            "stopped_by_user": run.stopped_by_user,
            "reach": self.holder.reach.to_dict(),
            "continued": steps.continued,
        }

    # -- agents and the run ------------------------------------------------------------
    def connect(self, agent: DebuggableAgent[Any]) -> Callable[[], None]:
        """Hold ``agent``'s runs in step mode and remember it for forks and a button's
        tools (the debugger is already among its observers: see
        :class:`~toolloop_lab._engine.hooks.ConnectsToAgent`); returns the disconnect.
        The agent is held weakly: a sweep's many agents are not kept alive by it."""
        key = id(agent)
        held = self._connections.get(key)
        if held is not None and held[0]() is agent:
            return held[1]
        # the run's start tells the holder its agent has the step hook (see _connected_event)
        removers = [agent.subscribe(self._connected_event), agent.add_pause_hook(self.steps)]

        def disconnect() -> None:
            for remove in removers:
                remove()
            removers.clear()
            if self._connections.get(key, (None,))[0] is ref:
                del self._connections[key]

        ref = _ref(agent)
        self._connections[key] = (ref, disconnect)
        self.agent = agent
        return disconnect

    def connected(self, agent: object) -> bool:
        """True when ``agent`` (or the agent a ``Fork`` runs with) is connected."""
        for one in (agent, getattr(agent, "agent", None)):
            held = self._connections.get(id(one))
            if one is not None and held is not None and held[0]() is one:
                return True
        return False

    def disconnect_all(self) -> None:
        """Disconnect from every agent."""
        for _, disconnect in list(self._connections.values()):
            disconnect()

    def start(
        self, agent: DebuggableAgent[R], prompt: str | Sequence[Any], observer: Observer
    ) -> asyncio.Task[R]:
        """Run ``agent`` on ``prompt`` as a background task (see :meth:`LoopDebugger.start`);
        an agent not connected yet is connected for this run only."""
        if self.running():
            raise RuntimeError("a run is already in progress: stop() it or wait for it")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "start() needs a running event loop (a notebook cell has one); elsewhere "
                "give the debugger to the agent, LLMAgent(..., observers=[dbg]), and run it "
                "with agent.run(...) or `await agent.arun(...)`"
            ) from None
        for_this_run: list[Callable[[], None]] = []
        if not self.connected(agent):
            if not any(o is observer for o in agent.observers):
                for_this_run.append(agent.subscribe(observer))  # an LLMAgent connects it
            if not self.connected(agent):  # an agent that does not connect its observers
                for_this_run.append(self.connect(agent))
        self._run.restart()
        self.agent = agent  # kept after the run: a fork of this run needs it
        task: asyncio.Task[R] = loop.create_task(agent.arun(prompt), name="toolloop-debugger-run")
        self.task = task
        self.steps.arm(task)
        task.add_done_callback(lambda finished: self._done(finished, for_this_run))
        return task

    def _done(self, finished: asyncio.Task[Any], for_this_run: list[Callable[[], None]]) -> None:
        """A run :meth:`start` made ended: say how, when the events do not."""
        for undo in reversed(for_this_run):
            undo()
        self.steps.disarm(finished)  # a newer arming stays
        self.waiters.ended("the run ended without pausing again; await dbg.task for how")
        run = self._run
        if finished.cancelled():
            if run.view.status in ("idle", "running", "paused"):
                run.note = "the run was stopped"
        else:
            exc = finished.exception()  # marks it retrieved; the task still raises it
            if exc is not None and run.view.failure is None:
                run.note = f"the run raised {explain(exc)}"
            elif exc is None:
                self._on_result(finished.result())
        self._request()

    # -- step mode ---------------------------------------------------------------------
    def stop(self) -> bool:
        """Cancel the run cleanly (see :meth:`LoopDebugger.stop`)."""
        if self.holder.stop():
            self._run.stopped_by_user = True
            return True
        task = self.task
        if task is not None and not task.done():
            self._run.stopped_by_user = True
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
        stopped = self.steps.stop()
        if stopped:
            self._run.stopped_by_user = True
        return stopped

    def continue_(self) -> bool:
        """Let the run go on to its end without pausing again (see
        :meth:`LoopDebugger.continue_`); False, and nothing changes, when not paused."""
        released = self.steps.continue_()
        self._request()
        return released

    def on_control(self, content: dict[Any, Any]) -> Answer:
        """Continue, Step or Stop from the browser, checked first. A Continue or Step that
        names the pause it was clicked at (``pause``) acts only while the loop still waits
        there: a double click or a late message never releases a later pause. One that
        carries the edit open on the page makes it first, and holds the pause when it is
        refused: the run never goes on other than as the person set it up."""
        request = parse_control(content)
        if isinstance(request, Answer):
            return request
        if isinstance(request, StopRun):
            if self.stop():
                return Answer(request.request, "stop", True)
            return Answer(request.request, "stop", False, "not_running", "no run to stop")
        return self._release(request)

    def _release(self, request: Release) -> Answer:
        """Step or Continue, after the change that goes with it (if any) is made."""
        action, at = request.action, request.pause
        if request.change is not None:
            refused = self._change_first(request, request.change)
            if refused is not None:
                return refused
        steps = self.steps
        released = steps.step(at=at) if action == "step" else steps.continue_(at=at)
        if not released:
            said = "the loop no longer waits at the pause this click was meant for"
            return Answer(request.request, action, False, "not_paused", said)
        if action == "continue":
            self._request()
        return Answer(request.request, action, True)

    def _change_first(self, request: Release, change: Change) -> Answer | None:
        """Make ``change`` at the pause the loop waits at; the refusal to send (the pause
        holds) when it cannot be made, ``None`` once it is."""
        point = self.steps.waiting_at  # not a pause already let go
        serial = self.steps.pauses
        action = request.action
        if point is None:
            said = "not paused: your edit was not applied"
            return Answer(request.request, action, False, "not_paused", said)
        if change.pause != serial or request.pause not in (None, serial):
            said = "the run has moved on to another pause since: your edit was not applied"
            return Answer(request.request, action, False, "stale", said)
        made = apply_request(point, change, self._tool_named)
        if made.ok:
            return None
        return Answer(request.request, action, False, made.reason, made.message)

    def carry_out(self, content: dict[Any, Any], fork_here: Callable[[ForkHere], Answer]) -> Answer:
        """Check a request from the browser, then act on it; refusals are answers."""
        request = parse_request(content)
        if isinstance(request, Answer):
            return request
        if isinstance(request, ForkHere):
            return fork_here(request)
        point = self.steps.paused_at
        if point is None:
            return Answer(request.request, request.action, False, "not_paused", "not paused")
        if request.pause != self.steps.pauses:
            return Answer(
                request.request,
                request.action,
                False,
                "stale",
                "the run has moved on to another pause since",
            )
        return apply_request(point, request, self._tool_named)

    def _tool_named(self, name: str) -> BaseTool | None:
        agent = self.agent
        target = getattr(agent, "agent", agent)
        runs_with = getattr(target, "_run_tools", None)  # a middleware: its agent's tools
        tools = runs_with() if callable(runs_with) else getattr(target, "tools", ())
        return next((t for t in tools if isinstance(t, BaseTool) and t.name == name), None)
