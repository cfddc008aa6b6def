"""Waiting for a run's next pause (``await dbg.next_pause()``) without polling.

Each wait is a future on the waiter's own event loop. A pause settles every future with
its point; the end of the run settles them with :class:`~toolloop_lab.errors.NoPauseError`.
Pauses and ends may come from another thread than the waiter's, so each future is settled
on its own loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from toolloop_lab._engine.hooks import PausePoint
from toolloop_lab.errors import NoPauseError


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
