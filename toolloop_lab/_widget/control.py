"""The debugger's step control: the run it started, its pauses, and what a person does there.

:meth:`Control.start` runs an agent as a background task on the running event loop, so the
kernel stays responsive and Continue, Step and Stop work during the run. The
:class:`~.step.StepController` holds that task (never a run awaited in a cell, which would
wait forever) where the pause mode says. At a pause, the browser can change the run: each
request is checked (:mod:`.requests`) and made through the pause point (:mod:`.pausing`).

Only the public agent API is used: ``observers``, ``subscribe``, ``add_pause_hook`` and
``arun`` (see :class:`DebuggableAgent`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from langchain_core.tools import BaseTool

from toolloop_lab._engine.hooks import PauseHook, PausePoint
from toolloop_lab._support.errortext import explain
from toolloop_lab._support.words import outcome_text
from toolloop_lab._widget.holding import Holder
from toolloop_lab._widget.pausing import apply_request, point_dict
from toolloop_lab._widget.requests import (
    Answer,
    Change,
    ForkHere,
    Release,
    StopRun,
    parse_control,
    parse_request,
)
from toolloop_lab._widget.shown import ShownRun
from toolloop_lab._widget.step import PauseMode, StepController
from toolloop_lab._widget.waiting import PauseWaiters
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


class Control:
    """The task a debugger started, the agents it is attached to, and its step mode.

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
        """The agent last run or watched (its tools answer calls by hand; forks run with it)."""
        self._detachers: dict[int, Callable[[], None]] = {}
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
        :mod:`.holding`); at its end, it is held no more."""
        if isinstance(event, LoopStarted):
            self.holder.started(event, own=self.task)
        elif isinstance(event, (LoopFinished, LoopFailed)):
            self.holder.ended(event.run_id)
            if self._run.shows(event.run_id):  # not a sub-agent's end
                said = outcome_text(event.outcome)
                self.waiters.ended(f"the run ended without pausing again ({said})")

    def _attached_event(self, event: Event) -> None:
        """Every event of an attached agent's runs: its run's agent holds the step hook.
        Called before the debugger's own observer, unless that was the agent's already
        (``observers=[dbg]``): then the run shown is decided again."""
        if isinstance(event, LoopStarted):
            self.holder.attached(event.run_id)
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
    def attach(self, agent: DebuggableAgent[Any], observer: Observer) -> Callable[[], None]:
        """Feed ``observer`` from ``agent``'s runs and hold them in step mode; returns detach."""
        key = id(agent)
        existing = self._detachers.get(key)
        if existing is not None:
            return existing
        # first, so the debugger's observer knows an attached agent's run when it starts
        removers = [agent.subscribe(self._attached_event)]
        if not any(o is observer for o in agent.observers):
            removers.append(agent.subscribe(observer))
        removers.append(agent.add_pause_hook(self.steps))

        def detach() -> None:
            for remove in removers:
                remove()
            removers.clear()
            self._detachers.pop(key, None)

        self._detachers[key] = detach
        self.agent = agent
        return detach

    def detach_all(self) -> None:
        """Detach from every agent."""
        for detach in list(self._detachers.values()):
            detach()

    def start(
        self, agent: DebuggableAgent[R], prompt: str | Sequence[Any], observer: Observer
    ) -> asyncio.Task[R]:
        """Run ``agent`` on ``prompt`` as a background task, attached to ``observer`` for
        the run (see :meth:`LoopDebugger.start`)."""
        if self.running():
            raise RuntimeError("a run is already in progress: stop() it or wait for it")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "start() needs a running event loop (a notebook cell has one); elsewhere "
                "attach the debugger and `await agent.arun(...)`"
            ) from None
        temporary = id(agent) not in self._detachers
        detach = self.attach(agent, observer)
        self._run.restart()
        self.agent = agent  # kept after a temporary attach: a fork of this run needs it
        task: asyncio.Task[R] = loop.create_task(agent.arun(prompt), name="toolloop-debugger-run")
        self.task = task
        self.steps.arm(task)
        task.add_done_callback(lambda finished: self._done(finished, detach if temporary else None))
        return task

    def _done(self, finished: asyncio.Task[Any], detach: Callable[[], None] | None) -> None:
        """A run :meth:`start` made ended: say how, when the events do not."""
        if detach is not None:
            detach()
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
        tools = getattr(getattr(agent, "agent", agent), "tools", ())
        return next((t for t in tools if isinstance(t, BaseTool) and t.name == name), None)
