"""Step mode: hold a run at its pause points until a person says Step, Continue or Stop.

:class:`StepController` is the pause hook a debugger adds to every agent it is connected to
(see :mod:`toolloop_lab._engine.hooks`). It only ever holds the task it was armed for: the
task :meth:`LoopDebugger.start` created, or the task of a run the page's clicks can reach
(:mod:`.reach`). A run they cannot reach (``agent.run()`` while the kernel reads clicks on
the thread it blocks) is never held: it would wait forever. Releasing is thread-safe, since
clicks come in on the kernel's thread (or a subshell's) while the loop may wait on another.

:class:`PauseWaiters` are the futures awaiting the next pause (``await dbg.next_pause()``),
each settled on its own loop, without polling: a pause settles them with its point, the
end of the run with :class:`~toolloop_lab.errors.NoPauseError`.

:class:`Steps` is what ``LoopDebugger`` offers for step mode: where it pauses
(``pause_on``), where the loop waits (``paused_at``, numbered as the debugger numbers
rounds), waiting for the next pause, and the buttons' calls. A fork's debugger numbers its
rounds as the original's (``round_offset``); the pause points it hands out say the same
number as its header, its summary and its rounds, so a person reads one numbering
everywhere. The point the loop itself holds keeps the fork's own run's numbering (its
events'), and changes made through either copy are the same change.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, TypeAlias, TypeGuard

from toolloop_lab._engine.hooks import PausePoint
from toolloop_lab.errors import ConfigurationError, NoPauseError, PauseTimeoutError

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


class PauseWaiters:
    """The futures awaiting the next pause of the run the controls hold."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[asyncio.Future[PausePoint]] = []

    def wait(self) -> asyncio.Future[PausePoint]:
        """A future the next pause (or the run's end) settles, on the running loop."""
        future: asyncio.Future[PausePoint] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._waiting.append(future)
        return future

    def forget(self, future: asyncio.Future[PausePoint]) -> None:
        """Stop settling ``future`` (its waiter gave up)."""
        with self._lock:
            if future in self._waiting:
                self._waiting.remove(future)

    def paused(self, point: PausePoint) -> None:
        """The loop paused at ``point``: every waiter gets it."""
        self._settle(lambda future: future.set_result(point))

    def ended(self, why: str) -> None:
        """The run ended (``why`` says how): every waiter gets a ``NoPauseError``."""
        self._settle(lambda future: future.set_exception(NoPauseError(why)))

    def _settle(self, act: Callable[[asyncio.Future[PausePoint]], None]) -> None:
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for future in waiting:

            def settle(future: asyncio.Future[PausePoint] = future) -> None:
                if not future.done():
                    act(future)

            loop = future.get_loop()
            try:
                same = asyncio.get_running_loop() is loop
            except RuntimeError:
                same = False
            if same:
                settle()
            elif not loop.is_closed():
                loop.call_soon_threadsafe(settle)


if TYPE_CHECKING:
    from toolloop_lab._widget.control import Control
    from toolloop_lab._widget.reach import Reach


def _is_mode(mode: object) -> TypeGuard[PauseMode]:
    return isinstance(mode, str) and mode in PAUSE_MODES


def check_mode(mode: object, where: str) -> PauseMode:
    """``mode`` when it is one of :data:`PAUSE_MODES`; otherwise a ``ConfigurationError``
    saying ``where`` (the call as written), the modes, and the one a typo meant, if one is
    close. Checked before anything is made: a debugger that refuses its ``pause_on`` leaves
    nothing behind."""
    if _is_mode(mode):
        return mode
    choices = ", ".join(repr(m) for m in PAUSE_MODES)
    close = difflib.get_close_matches(mode, PAUSE_MODES, n=1) if isinstance(mode, str) else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigurationError(f"{where}: pause_on must be one of {choices}{hint}", field="pause_on")


class Steps:
    """Step mode as a debugger offers it; the debugger's methods hand their work here.

    ``show_mode`` puts a mode on the page (the synced ``_pause_on`` trait, set only when it
    changes); ``offset`` is the debugger's ``round_offset`` now (a fork's rounds read as the
    original's)."""

    def __init__(
        self, control: Control, show_mode: Callable[[PauseMode], None], offset: Callable[[], int]
    ) -> None:
        self._control = control
        self._show_mode = show_mode
        self._offset = offset

    @property
    def mode(self) -> PauseMode:
        """Where step mode pauses a run the controls reach."""
        return self._control.steps.mode

    def set_mode(self, mode: PauseMode) -> None:
        """Pause where ``mode`` says from now on (checked by the caller), and show it."""
        self._control.steps.mode = mode
        self._show_mode(mode)

    def from_page(self, mode: object) -> None:
        """The page's selector changed: take its mode, or show ours again when the page sent
        something else."""
        if _is_mode(mode):
            self._control.steps.mode = mode
        else:
            self._show_mode(self._control.steps.mode)

    def numbered(self, point: PausePoint | None) -> PausePoint | None:
        """``point`` with its round as the debugger numbers rounds (a fork's as the
        original's); the same editor, so a change through it is the run's."""
        offset = self._offset()
        if point is None or not offset:
            return point
        return dataclasses.replace(point, round=point.round + offset)

    @property
    def paused_at(self) -> PausePoint | None:
        """Where the loop waits right now, numbered as the debugger numbers rounds."""
        return self.numbered(self._control.steps.paused_at)

    async def next_pause(self, timeout: float) -> PausePoint:
        """Wait for the next pause (see :meth:`LoopDebugger.next_pause`)."""
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ConfigurationError(
                f"next_pause(timeout={timeout!r}): pass a number of seconds > 0",
                field="timeout",
            )
        control = self._control
        waiting = control.steps.waiting_at
        if waiting is not None:
            return self.numbered(waiting) or waiting
        why = control.why_no_pause()
        if why is not None:
            raise NoPauseError(why)
        future = control.waiters.wait()
        waiting = control.steps.waiting_at  # it may have paused on another thread meanwhile
        if waiting is not None:
            control.waiters.forget(future)
            return self.numbered(waiting) or waiting
        try:
            point = await asyncio.wait_for(future, None if math.isinf(timeout) else timeout)
        except TimeoutError:
            control.waiters.forget(future)
            raise PauseTimeoutError(
                f"no pause within {timeout:g} s: the run goes on and has not reached a "
                f"point pause_on={control.steps.mode!r} stops at. Wait longer "
                "(dbg.next_pause(timeout=...)), see what it is doing (dbg.summary()), "
                "or stop it (dbg.stop())"
            ) from None
        return self.numbered(point) or point

    def step(self) -> bool:
        """Go on to the next pause point (see :meth:`LoopDebugger.step`)."""
        return self._control.steps.step()

    def continue_(self) -> bool:
        """Let the run go on to its end (see :meth:`LoopDebugger.continue_`)."""
        return self._control.continue_()

    def stop(self) -> bool:
        """Stop the run (see :meth:`LoopDebugger.stop`)."""
        return self._control.stop()

    @property
    def reach(self) -> Reach:
        """What the controls can do for the run shown (see :mod:`.reach`)."""
        return self._control.holder.reach
