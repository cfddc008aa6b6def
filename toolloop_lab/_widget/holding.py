"""The run the page's controls hold when the debugger did not start it.

``LLMAgent(..., observers=[dbg])`` then ``await agent.arun(...)`` (or ``agent.run(...)``) runs in a
task the debugger never made: the cell's own, or the sync runner's. When such a run
starts and is the run shown, :class:`Holder` decides (:func:`~.reach.decide`) whether the
page's clicks can reach it; if they can, it takes the run's task (``asyncio.current_task()``
at its ``loop_start``) as the one step mode holds and Stop cancels, for that run only. A
nested run (a sub-agent called by a tool) is never taken: a stop of its parent ends it,
and its pauses are not the shown run's.

Stop cancels through :func:`~toolloop_lab._engine.stopping.request_stop`, on the run's
own loop, which acts only while that run still goes on in the task: a late click never
cancels what a cell does after the run. The run then raises
:class:`~toolloop_lab.errors.RunStopped` with its partial counts.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

from toolloop_lab._engine.stopping import request_stop
from toolloop_lab._widget.reach import FULL, Reach, decide, kernel_info
from toolloop_lab._widget.step import StepController
from toolloop_lab.events import LoopStarted


@dataclass(frozen=True, slots=True)
class _Held:
    """A run the controls act on: its id, the task it runs in and that task's loop."""

    run_id: str
    task: asyncio.Task[object]
    loop: asyncio.AbstractEventLoop


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Holder:
    """What the controls reach of the run shown, and the run they hold when it is not
    one :meth:`LoopDebugger.start` made."""

    def __init__(self, steps: StepController) -> None:
        self._steps = steps
        self._lock = threading.Lock()
        self._home_loop = _running_loop()
        """The loop the debugger was made on (a notebook's: the kernel's)."""
        self._home_thread = threading.get_ident()
        self.page_off_home = False
        """The page's last message came in on another thread than the kernel's."""
        self.reach: Reach = FULL
        """What the controls can do for the run shown."""
        self._held: _Held | None = None
        self._ended = False
        self._connected: str | None = None
        """The last run a connected agent started."""

    def heard_page(self) -> None:
        """A page's message came in (on the thread reading it now)."""
        self.page_off_home = threading.get_ident() != self._home_thread

    def connected(self, run_id: str) -> None:
        """Run ``run_id``, starting now, is a connected agent's (it has the step hook)."""
        self._connected = run_id

    def started(self, event: LoopStarted, *, own: asyncio.Task[object] | None) -> None:
        """The run shown started (its observer calls this inside the run): decide what
        the controls reach, and hold the run when they reach it. ``own`` is the task of
        the debugger's own :meth:`start`."""
        if event.parent_run_id is not None:
            return  # reached through its parent only
        loop = _running_loop()
        task = None if loop is None else asyncio.current_task()
        if own is not None and task is own:
            with self._lock:
                self.reach, self._held, self._ended = FULL, None, False
            return
        reach = decide(
            source=event.source,
            connected=event.run_id == self._connected,
            on_home_loop=loop is not None and loop is self._home_loop,
            kernel=kernel_info(),
            page_off_home=self.page_off_home,
        )
        held = None
        if reach.stop and task is not None and loop is not None:
            held = _Held(event.run_id, task, loop)
        with self._lock:
            self.reach, self._held, self._ended = reach, held, False
            self._steps.arm(task if held is not None and reach.pause else None)

    def ended(self, run_id: str) -> None:
        """The run shown ended (its final event): hold it no more."""
        with self._lock:
            held = self._held
            if held is None or held.run_id != run_id:
                return
            self._ended = True
            self._steps.disarm(held.task)

    def running(self) -> bool:
        """True while a held run goes on."""
        with self._lock:
            return self._held is not None and not self._ended

    def stop(self) -> bool:
        """Stop the held run (on its own loop); False when none goes on."""
        with self._lock:
            held = self._held
            if held is None or self._ended:
                return False

        def act() -> None:
            request_stop(held.task, held.run_id)

        if _running_loop() is held.loop:
            act()
            return True
        try:
            held.loop.call_soon_threadsafe(act)
        except RuntimeError:  # its loop was closed: the run is over
            return False
        return True
