"""Coalesced redraws: many events, few frontend updates, and the last state always drawn.

The Jupyter server silently drops comm messages beyond about 1,000 per second, so a view
that redrew on every event of a fast loop would lose updates. A :class:`Coalescer` draws
at most ``max_per_second`` times: the first request draws at once (leading edge), later
ones inside the interval only mark the view dirty and arm one timer (trailing edge), and
:meth:`Coalescer.flush` draws whatever is pending right now (on a pause, a finish or a
failure). Time and timers are injectable, so tests drive it with a fake clock.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TypeAlias

Clock: TypeAlias = Callable[[], float]
"""Seconds from a monotonic clock."""

Scheduler: TypeAlias = Callable[[float, Callable[[], None]], bool]
"""Run the callback after the delay; return False when no timer could be armed."""


def loop_scheduler(delay: float, callback: Callable[[], None]) -> bool:
    """Arm a timer on the event loop running in this thread, if there is one.

    Observers are called from inside the agent's loop, so there is one whenever events
    arrive; without one the next request or :meth:`Coalescer.flush` draws instead.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    loop.call_later(delay, callback)
    return True


class Coalescer:
    """Call ``draw`` at most ``max_per_second`` times, never leaving a request undrawn."""

    def __init__(
        self,
        draw: Callable[[], None],
        *,
        max_per_second: float = 10.0,
        clock: Clock = time.monotonic,
        schedule: Scheduler = loop_scheduler,
    ) -> None:
        if not max_per_second > 0:
            raise ValueError("max_per_second must be > 0")
        self._draw = draw
        self.interval = 1.0 / max_per_second
        self._clock = clock
        self._schedule = schedule
        self._lock = threading.RLock()
        self._last: float | None = None
        self._dirty = False
        self._armed = False
        self.requests = 0
        """Redraws asked for."""
        self.draws = 0
        """Redraws done."""

    @property
    def dirty(self) -> bool:
        """True while a request has not been drawn yet."""
        return self._dirty

    @property
    def armed(self) -> bool:
        """True while a timer will draw the pending request."""
        return self._armed

    def request(self) -> None:
        """Ask for a redraw: now if the interval has passed, else once it has."""
        with self._lock:
            self.requests += 1
            self._dirty = True
            now = self._clock()
            if self._last is None or now - self._last >= self.interval:
                self._draw_now(now)
            elif not self._armed:
                delay = self.interval - (now - self._last)
                self._armed = bool(self._schedule(delay, self._on_timer))

    def flush(self) -> None:
        """Draw now if anything is pending (final states, pauses)."""
        with self._lock:
            if self._dirty:
                self._draw_now(self._clock())

    def force(self) -> None:
        """Draw now, pending or not (the user clicked something)."""
        with self._lock:
            self._dirty = True
            self._draw_now(self._clock())

    def _on_timer(self) -> None:
        with self._lock:
            self._armed = False
            if not self._dirty:
                return
            now = self._clock()
            wait = 0.0 if self._last is None else self.interval - (now - self._last)
            if wait > 1e-6:  # something drew in between (a flush): keep the pace
                self._armed = bool(self._schedule(wait, self._on_timer))
                return
            self._draw_now(now)

    def _draw_now(self, now: float) -> None:
        self._dirty = False
        self._last = now
        self.draws += 1
        self._draw()
