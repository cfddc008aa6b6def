"""A stop asked for one run: the task running it is cancelled, and the run raises
:class:`~toolloop_lab.errors.RunStopped` instead of ``CancelledError``. And a time limit
around runs (:func:`time_limit`, a sweep's per-scenario limit): the task is cancelled when
it runs out, and the runs it cancels end as timed out, not as stopped.

A debugger can hold a run it did not start: ``await agent.arun(...)`` in a notebook cell
runs in the kernel's own task, ``agent.run(...)`` in the sync runner's. Cancelling that
task is the only way to stop the run at whatever it awaits (a model call, a tool, a
pause), but a bare ``CancelledError`` would leave the caller's task marked as cancelled
(``Task.cancelling()``) and print a traceback of asyncio's internals in the cell. So the
stop is marked first: the run's guard, seeing ``CancelledError`` in the marked task for
its own run, ends the run as any stop does (``loop_failure``, ``cancelled``), withdraws
that one cancellation (``Task.uncancel``) and raises ``RunStopped`` with the partial
counts. A cancellation somebody else asked for as well still propagates as it is.

:func:`request_stop` is called on the task's own event loop (``call_soon_threadsafe`` from
another thread), and cancels only while the run named is still going on in that task (the
guard registers each run in its task, :func:`running`): the task of a notebook cell goes on
after the run, and a late click must never cancel whatever the cell does next.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

from toolloop_lab._support.words import time_limit_text
from toolloop_lab.errors import TimeLimitError

STOP_MESSAGE: Final = "stopped by a person (Stop)"
"""The cancel message of a requested stop (the run's ``loop_failure`` message)."""

_lock = threading.Lock()
"""Guards both maps (runs go on in many threads' loops at once)."""
_marked: weakref.WeakKeyDictionary[asyncio.Task[Any], str] = weakref.WeakKeyDictionary()
"""Task -> the run a stop was asked for."""
_runs: weakref.WeakKeyDictionary[asyncio.Task[Any], set[str]] = weakref.WeakKeyDictionary()
"""Task -> the runs going on in it now."""


def _forget_after_fork() -> None:
    """In a forked child (a sweep's worker): a lock no thread of the child holds, and none
    of the parent's tasks (they do not run here)."""
    global _lock, _marked, _runs
    _lock = threading.Lock()
    _marked = weakref.WeakKeyDictionary()
    _runs = weakref.WeakKeyDictionary()


if hasattr(os, "register_at_fork"):  # every POSIX system; Windows never forks
    os.register_at_fork(after_in_child=_forget_after_fork)


@contextmanager
def running(run_id: str) -> Iterator[None]:
    """Register run ``run_id`` as going on in the current task for the block."""
    task = asyncio.current_task()
    if task is None:
        yield
        return
    with _lock:
        _runs.setdefault(task, set()).add(run_id)
    try:
        yield
    finally:
        with _lock:
            _runs.get(task, set()).discard(run_id)
            if _marked.get(task) == run_id:  # a stop the run never saw is not kept
                del _marked[task]


def request_stop(task: asyncio.Task[Any], run_id: str) -> bool:
    """Cancel ``task`` so that run ``run_id`` ends as stopped; False, and nothing done,
    when that run is not going on in ``task`` (it ended, or never ran there)."""
    with _lock:
        if run_id not in _runs.get(task, ()) or task.done():
            return False
        _marked[task] = run_id
    task.cancel(STOP_MESSAGE)
    return True


def claim_stop(run_id: str) -> bool:
    """In the guard of run ``run_id``, as ``CancelledError`` passes: True when the stop
    was asked for this run, and it was the task's only cancellation (withdrawn here, so
    the caller's task goes on clean); the guard then raises ``RunStopped``."""
    task = asyncio.current_task()
    with _lock:
        if task is None or _marked.get(task) != run_id:
            return False
        del _marked[task]
    task.uncancel()
    return task.cancelling() == 0


@dataclass(frozen=True, slots=True)
class _Limit:
    seconds: float
    kind: str
    timer: asyncio.Timeout

    def error(self) -> TimeLimitError:
        said = time_limit_text(self.kind, self.seconds)
        return TimeLimitError(said, kind=self.kind, limit_s=self.seconds)


_LIMIT: ContextVar[_Limit | None] = ContextVar("toolloop_lab_time_limit", default=None)
"""The innermost :func:`time_limit` around the code running (tasks it starts, a tool's
sub-agent, see the same one)."""


@asynccontextmanager
async def time_limit(seconds: float | None, *, kind: str) -> AsyncIterator[None]:
    """Cancel the current task once the block has taken ``seconds`` (``None``: never), and
    raise :class:`~toolloop_lab.errors.TimeLimitError` (``kind``, ``reason="timeout"``) in
    place of that cancellation. A run it cancels ends as every cancelled run does (every
    open call answered, its ``loop_failure`` last), but says why: its guard asks
    :func:`time_limit_reached`. A cancellation somebody else asked for propagates as it is
    (``asyncio.timeout`` tells them apart)."""
    if seconds is None:
        yield
        return
    timer = asyncio.timeout(seconds)
    limit = _Limit(seconds, kind, timer)
    token = _LIMIT.set(limit)
    try:
        async with timer:
            yield
    except TimeoutError:
        if not timer.expired():  # raised in the block, not by this limit
            raise
        raise limit.error() from None
    finally:
        _LIMIT.reset(token)


def time_limit_reached() -> TimeLimitError | None:
    """In a run's guard, as ``CancelledError`` passes: the error of the :func:`time_limit`
    that ran out and cancelled this task, or ``None`` when none did (a stop, a shutdown)."""
    limit = _LIMIT.get()
    return limit.error() if limit is not None and limit.timer.expired() else None
