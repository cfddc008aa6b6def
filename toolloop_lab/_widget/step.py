"""Step mode: hold the loop at pause points until the person says Continue, Step or Stop.

The controller is a pause hook (see :mod:`toolloop_lab._engine.hooks`). It only ever holds the
task it was armed for: the task :meth:`LoopDebugger.start` created, or the task of a run
the page's clicks can reach (:mod:`.holding`). A run they cannot reach (``agent.run()``
while the kernel reads clicks on the thread it blocks) is never held: it would wait
forever. Releasing is thread-safe, since clicks come in on the kernel's thread (or a
subshell's) while the loop may wait on another.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Literal, TypeAlias

from toolloop_lab._engine.hooks import PausePoint

PauseMode: TypeAlias = Literal["off", "model", "tools", "both"]
"""Where step mode pauses: never, before model calls, before tool dispatch, or both."""

PAUSE_MODES: tuple[PauseMode, ...] = ("off", "model", "tools", "both")


class StepController:
    """Pauses the armed task at matching pause points; released by step/continue/stop."""

    def __init__(
        self,
        *,
        mode: PauseMode = "off",
        on_pause: Callable[[PausePoint], None] | None = None,
        on_resume: Callable[[], None] | None = None,
    ) -> None:
        self.mode: PauseMode = mode
        self._on_pause = on_pause
        self._on_resume = on_resume
        self._task: asyncio.Task[object] | None = None
        self._released: asyncio.Task[object] | None = None
        self._lock = threading.Lock()
        self._waiter: asyncio.Future[None] | None = None
        self._waiter_loop: asyncio.AbstractEventLoop | None = None
        self.paused_at: PausePoint | None = None
        self.pauses = 0
        """How many times the loop was held."""
        self._let_go = 0
        """The pause (a count of :attr:`pauses`) last released: the loop may still wait
        there a moment, on another thread, until it goes on."""

    def arm(self, task: asyncio.Task[object] | None) -> None:
        """Hold only this task's run (``None``: hold nothing)."""
        self._task = task
        self._released = None

    def disarm(self, task: asyncio.Task[object]) -> None:
        """Hold nothing any more, if armed for ``task`` (a newer arming stays)."""
        if self._task is task:
            self.arm(None)

    def _stops_at(self, stage: str) -> bool:
        mode = self.mode
        if mode == "both":
            return True
        if mode == "model":
            return stage == "model_call"
        if mode == "tools":
            return stage == "tool_dispatch"
        return False

    def may_hold(self, stage: str) -> bool:
        """Whether the calling task would be held at a ``stage`` point now: only the armed
        task, not released, in a mode that stops there (the loop asks before it builds a
        pause point, so a connected debugger costs a running loop almost nothing)."""
        task = self._task
        return (
            task is not None
            and self._released is not task
            and asyncio.current_task() is task
            and self._stops_at(stage)
        )

    async def __call__(self, point: PausePoint) -> None:
        """The pause hook: wait here until released; a stop raises ``CancelledError``."""
        if not self.may_hold(point.stage):
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        with self._lock:
            self._waiter, self._waiter_loop = waiter, loop
            self.paused_at = point
            self.pauses += 1
        if self._on_pause is not None:
            self._on_pause(point)
        try:
            await waiter
        finally:
            with self._lock:
                self._waiter = self._waiter_loop = None
                self.paused_at = None
            if self._on_resume is not None:
                self._on_resume()

    @property
    def continued(self) -> bool:
        """True once the armed run was let go on to its end (Continue): it will not pause
        again, whatever :attr:`mode` says (the mode is the next run's too)."""
        return self._task is not None and self._released is self._task

    @property
    def waiting_at(self) -> PausePoint | None:
        """Where the loop waits and nobody has released it yet (:attr:`paused_at`, but not
        a pause just stepped past that the loop has not left yet)."""
        with self._lock:
            return self.paused_at if self._let_go != self.pauses else None

    @property
    def paused(self) -> bool:
        """True while the loop waits at a pause point."""
        return self.paused_at is not None

    def _release(self, *, cancel: bool, for_good: bool = False, at: int | None = None) -> bool:
        """Release the pause the loop waits at; nothing changes when it waits at none, or
        at another than pause number ``at`` (``for_good``: and let the armed run go on
        without pausing again)."""
        with self._lock:
            waiter, loop = self._waiter, self._waiter_loop
            if waiter is None or loop is None or waiter.done():
                return False
            if at is not None and at != self.pauses:
                return False
            if for_good:
                self._released = self._task
            self._let_go = self.pauses

        def settle() -> None:
            if waiter.done():
                return
            if cancel:
                waiter.cancel()
            else:
                waiter.set_result(None)

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            settle()
        else:
            loop.call_soon_threadsafe(settle)
        return True

    def step(self, *, at: int | None = None) -> bool:
        """Go on to the next matching pause point. False, and nothing changes, when
        nothing is paused, or (given ``at``, a count of :attr:`pauses`) when the loop
        waits at another pause than the one meant: a double click steps once."""
        return self._release(cancel=False, at=at)

    def continue_(self, *, at: int | None = None) -> bool:
        """Let this run go on to its end without pausing again; ``mode`` stays as it is,
        so the next run pauses where the person asked it to. False, and nothing changes,
        as for :meth:`step` (a late click must not stop every later pause; to stop pausing
        a running run, set ``mode`` to ``"off"``)."""
        return self._release(cancel=False, for_good=True, at=at)

    def stop(self) -> bool:
        """Cancel the run at the pause point it waits at; False when nothing was paused."""
        return self._release(cancel=True)
