"""What ``LoopDebugger`` offers for step mode (mixed into it): where it pauses, where the
loop waits (numbered as the debugger numbers rounds), waiting for the next pause, and the
buttons' calls (Step, Continue, Stop).

A fork's debugger numbers its rounds as the original's (``round_offset``); the pause points
it hands out say the same number as its header, its summary and its rounds, so a person
reads one numbering everywhere. The point the loop itself holds keeps the fork's own run's
numbering (its events'), and changes made through either copy are the same change.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from typing import Any

from toolloop_lab._engine.hooks import PausePoint
from toolloop_lab._widget.control import Control
from toolloop_lab._widget.options import check_mode
from toolloop_lab._widget.reach import Reach
from toolloop_lab._widget.step import PAUSE_MODES, PauseMode
from toolloop_lab.errors import ConfigurationError, NoPauseError, PauseTimeoutError


class StepMode:
    """Step mode, as ``LoopDebugger`` offers it."""

    _control: Control
    _pause_on: str
    round_offset: int

    @property
    def pause_on(self) -> PauseMode:
        """Where step mode pauses a run the controls reach (:attr:`reach`)."""
        return self._control.steps.mode

    @pause_on.setter
    def pause_on(self, mode: PauseMode) -> None:
        self._set_mode(check_mode(mode, f"dbg.pause_on = {mode!r}"))

    def _set_mode(self, mode: PauseMode) -> None:
        self._control.steps.mode = mode
        if self._pause_on != mode:
            self._pause_on = mode

    def _on_pause_trait(self, change: dict[str, Any]) -> None:
        new = change["new"]
        if new in PAUSE_MODES:
            self._control.steps.mode = new
        else:  # a front end sent something else: keep the mode, show it again
            self._pause_on = self._control.steps.mode

    def _numbered(self, point: PausePoint | None) -> PausePoint | None:
        """``point`` with its round as this debugger numbers rounds (a fork's as the
        original's); the same editor, so a change through it is the run's."""
        if point is None or not self.round_offset:
            return point
        return dataclasses.replace(point, round=point.round + self.round_offset)

    @property
    def paused_at(self) -> PausePoint | None:
        """Where the loop waits right now, if it does (its round numbered as this
        debugger's header and summary number it)."""
        return self._numbered(self._control.steps.paused_at)

    async def next_pause(self, timeout: float = 10.0) -> PausePoint:
        """Wait until the run pauses, and return where (as :attr:`paused_at`); at once
        when it waits at a pause nobody has stepped past yet.

        Raises :class:`~toolloop_lab.errors.NoPauseError` when no pause can come (no run
        goes on; ``pause_on`` is ``"off"``; Continue let the run go; it ended without
        pausing) and :class:`~toolloop_lab.errors.PauseTimeoutError` (a ``TimeoutError``)
        when ``timeout`` seconds pass first: the run goes on.
        """
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ConfigurationError(
                f"next_pause(timeout={timeout!r}): pass a number of seconds > 0",
                field="timeout",
            )
        control = self._control
        waiting = control.steps.waiting_at
        if waiting is not None:
            return self._numbered(waiting) or waiting
        why = control.why_no_pause()
        if why is not None:
            raise NoPauseError(why)
        future = control.waiters.wait()
        waiting = control.steps.waiting_at  # it may have paused on another thread meanwhile
        if waiting is not None:
            control.waiters.forget(future)
            return self._numbered(waiting) or waiting
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
        return self._numbered(point) or point

    def step(self) -> bool:
        """Go on to the next pause point; False, and nothing changes, when not paused."""
        return self._control.steps.step()

    def continue_(self) -> bool:
        """Let this run go on to its end without pausing (the next run pauses again);
        False, and nothing changes, when not paused."""
        return self._control.continue_()

    def stop(self) -> bool:
        """Stop the run; the view keeps its partial counts (its cell raises ``RunStopped``)."""
        return self._control.stop()

    @property
    def reach(self) -> Reach:
        """What the controls can do for the run shown, and why not (see :mod:`.reach`)."""
        return self._control.holder.reach
