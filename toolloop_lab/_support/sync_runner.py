"""Run a coroutine to completion from synchronous code, on an event loop that persists.

``asyncio.run`` makes a new loop per call and closes it. Provider SDKs (openai, anthropic)
cache one async HTTP client per base URL whose pooled keep-alive connections belong to the
loop that opened them, so a second ``agent.run()`` on the same chat model failed with
"Event loop is closed". Here every calling thread keeps one loop for all its sync runs, and
code that already runs inside an event loop (a notebook cell) hands the run to one
long-lived background loop, so repeated runs reuse the same loop either way.

A sync run started from code that itself runs on a background loop (an async tool calling
``sub_agent.run(...)`` while its own run came from ``agent.run()`` in a notebook) cannot be
queued on that loop: the loop is busy waiting for the tool. It goes to the next background
loop instead, one level deeper, so nested runs run rather than hang.

Whatever stops a run early (Ctrl-C, an exception) is not raised to the caller before the
run's task has finished, so the loop's final event is always emitted first.

A process forked while a loop runs (a ``ProcessPoolExecutor`` worker under Linux's default
``fork`` start method, forked from the thread running the sweep) inherits copies of this
module's loops and of the forking thread's "running loop", none of which runs there. The
child forgets them at once, as Python 3.12 and later do for asyncio's own state, so a run
in the child starts on a loop of its own.

Inside a notebook that is what a person wants: the cell waits for its run. Inside an
asyncio app (a web server, a bot) it blocks the app's own loop for the whole run, so
:func:`blocked_app_loop` tells a caller which loop it is about to block (none in an
IPython shell, where waiting is the point), for it to warn once per loop.

Entry points come in pairs (``what_if`` and ``awhat_if``, ``run_scenarios`` and
``arun_scenarios``, ``fork`` and ``afork``): :func:`parameters_of` gives the second of a
pair the first one's parameters, so each list is written once.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import functools
import inspect
import os
import signal
import sys
import threading
import weakref
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


class _ThreadLoop:
    """One calling thread's loop; closed when the thread's locals go away, in the process
    that made it only: a forked child drops its parent's other threads (and their locals)
    at once, and closing its copy of a loop would unregister the parent's own wake-up
    socket from the epoll instance they share, so the parent's loop would never wake."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()

    def __del__(self) -> None:
        if os.getpid() != self.pid:
            return
        if not self.loop.is_running() and not self.loop.is_closed():
            self.loop.close()


_local = threading.local()


def _thread_loop() -> asyncio.AbstractEventLoop:
    holder: _ThreadLoop | None = getattr(_local, "holder", None)
    if holder is None or holder.loop.is_closed():
        holder = _local.holder = _ThreadLoop()
    return holder.loop


_CTRL_C: Final = "interrupted by KeyboardInterrupt"
"""The cancel message of a run a Ctrl-C stopped (its LoopFailed message)."""


class _Presses:
    """How many times Ctrl-C was pressed while a sync run waited."""

    def __init__(self) -> None:
        self.count = 0


@contextlib.contextmanager
def _ctrl_c_stops(stop: Callable[[], object]) -> Iterator[_Presses]:
    """While the block runs, a first Ctrl-C calls ``stop`` (which only schedules the run's
    cancellation) instead of raising ``KeyboardInterrupt`` wherever the main thread is;
    a second one raises at once. Only in the main thread, under Python's default handler
    (a handler of the caller's own is left alone), as ``asyncio.run`` does.

    Python raises a Ctrl-C's ``KeyboardInterrupt`` at whatever line the main thread runs:
    inside the event loop's own code it can drop a callback, so cancelling the run then
    waits for ever; inside a finalizer the collector runs just then (garbage of earlier
    work), Python can only print "Exception ignored" and the Ctrl-C is lost, the run
    going on to its end. A handler that only schedules is safe wherever it runs.
    """
    presses = _Presses()
    default = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if threading.current_thread() is not threading.main_thread() or not default:
        yield presses
        return

    def pressed(signum: int, frame: object) -> None:
        presses.count += 1
        if presses.count > 1:
            raise KeyboardInterrupt
        stop()

    signal.signal(signal.SIGINT, pressed)
    try:
        yield presses
    finally:
        if signal.getsignal(signal.SIGINT) is pressed:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _drive(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], ctx: contextvars.Context
) -> T:
    """Run ``coro`` on this thread's ``loop``; if the caller is interrupted, cancel the task
    and let it finish (emitting its final event) before re-raising. A Ctrl-C cancels it
    from a loop callback (:func:`_ctrl_c_stops`), then raises ``KeyboardInterrupt``."""
    task: asyncio.Task[T] | None = None
    try:
        task = loop.create_task(coro, context=ctx)
        cancel = functools.partial(loop.call_soon_threadsafe, task.cancel, _CTRL_C)
        with _ctrl_c_stops(cancel) as presses:
            try:
                result = loop.run_until_complete(task)
            except asyncio.CancelledError:
                if not presses.count:
                    raise
                raise KeyboardInterrupt from None
        if presses.count:
            raise KeyboardInterrupt  # pressed as the run ended: the caller still hears it
        return result
    except BaseException as exc:
        if task is None:
            coro.close()
        elif not task.done():
            task.cancel(_why(exc))
            # the first interruption is what the caller sees
            with contextlib.suppress(BaseException):
                loop.run_until_complete(task)
        if task is not None and task.done() and not task.cancelled():
            task.exception()  # seen: asyncio must not log it as "never retrieved"
        raise


def _why(exc: BaseException) -> str:
    """The cancel message a run stopped by ``exc`` records (its LoopFailed message)."""
    return f"interrupted by {type(exc).__name__}"


@dataclass(eq=False)
class _Submitted:
    """One run handed to the background loop."""

    coro: Coroutine[Any, Any, Any]
    done: threading.Event = field(default_factory=threading.Event)
    task: asyncio.Task[Any] | None = None
    interrupt: BaseException | None = None
    abandoned: bool = False


class _Background:
    """A daemon thread running one loop forever, for callers that are inside a loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self.active: set[_Submitted] = set()  # touched only in the loop's thread
        self.thread = threading.Thread(target=self._serve, name="toolloop-sync", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        while True:
            try:
                self.loop.run_forever()
                return
            except (KeyboardInterrupt, SystemExit) as exc:
                # asyncio re-raises these out of whichever task raised them, often a
                # library's inner task. Stop every run here, as asyncio.run would, and
                # hand the interruption to their callers; keep serving later runs.
                for job in list(self.active):
                    job.interrupt = exc
                    if job.task is not None:
                        job.task.cancel(_why(exc))

    def _start(self, job: _Submitted) -> None:
        if job.abandoned:
            return
        job.task = self.loop.create_task(job.coro)  # in the context of this callback
        self.active.add(job)

        def finished(_task: asyncio.Task[Any]) -> None:
            self.active.discard(job)
            job.done.set()

        job.task.add_done_callback(finished)

    @staticmethod
    def _cancel(job: _Submitted) -> None:
        if job.task is not None:
            job.task.cancel()
        else:  # interrupted before it was started: it never will be
            job.abandoned = True
            job.coro.close()
            job.done.set()

    def stop(self) -> None:
        if self.loop.is_closed() or os.getpid() != self.pid:
            return  # a forked child's copy: the loop and its thread are the parent's
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()

    def run(self, coro: Coroutine[Any, Any, T], ctx: contextvars.Context) -> T:
        job = _Submitted(coro)

        def stop() -> None:  # a Ctrl-C in the caller's (main) thread: see _ctrl_c_stops
            job.interrupt = KeyboardInterrupt()
            self.loop.call_soon_threadsafe(self._cancel, job)

        try:
            with _ctrl_c_stops(stop) as presses:
                # inside the try: the run may get far (even to a Ctrl-C) before this returns
                self.loop.call_soon_threadsafe(self._start, job, context=ctx)
                job.done.wait()
        except BaseException:
            # the caller was interrupted: stop the run and let it emit its final event
            self.loop.call_soon_threadsafe(self._cancel, job)
            job.done.wait()
            raise
        task = job.task
        if task is None or task.cancelled():
            if job.interrupt is not None:
                raise job.interrupt
            raise asyncio.CancelledError
        if presses.count and task.exception() is None:
            raise KeyboardInterrupt  # pressed as the run ended: the caller still hears it
        error = task.exception()
        if error is not None:
            raise error
        result: T = task.result()
        return result


_backgrounds: list[_Background] = []
"""Background runners by nesting level: level 0 serves notebook cells, level n + 1 serves
sync runs started from code running on level n."""
_background_lock = threading.Lock()


def _background_runner() -> _Background:
    """The runner for a caller inside a running loop: one level below the caller's own."""
    current = threading.current_thread()
    with _background_lock:
        level = next((i + 1 for i, b in enumerate(_backgrounds) if b.thread is current), 0)
        while len(_backgrounds) <= level:
            _backgrounds.append(_Background())
            atexit.register(_backgrounds[-1].stop)
        if not _backgrounds[level].thread.is_alive():
            _backgrounds[level] = _Background()
            atexit.register(_backgrounds[level].stop)
        return _backgrounds[level]


_inherited: list[object] = []
"""What a forked child inherited from its parent's sync bridge: kept, never closed (the
loops' file descriptors are shared with the parent), never used."""


def _forget_parent_loops() -> None:
    """In a forked child: no running loop in this thread, no thread loops, no background
    runners (their threads do not exist here) and a lock nobody holds."""
    global _local, _backgrounds, _background_lock
    _inherited.append((_local, _backgrounds))
    _local = threading.local()
    _backgrounds = []
    _background_lock = threading.Lock()
    asyncio._set_running_loop(None)  # what Python 3.12+ does for asyncio itself


if hasattr(os, "register_at_fork"):  # every POSIX system; Windows never forks
    os.register_at_fork(after_in_child=_forget_parent_loops)


def _in_ipython() -> bool:
    """An IPython shell runs this process (a Jupyter kernel, or IPython in a terminal)."""
    ipython = sys.modules.get("IPython")
    getter = getattr(ipython, "get_ipython", None)
    try:
        return callable(getter) and getter() is not None
    except Exception:  # noqa: BLE001 - a half-imported IPython is no shell
        return False


_blocked: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
"""The app loops already reported by :func:`blocked_app_loop`."""


def blocked_app_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop a sync run would now block, the first time only for each
    loop; ``None`` outside a running loop, inside an IPython shell (a notebook cell is
    meant to wait), or for a loop already reported."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    if loop in _blocked or _in_ipython():
        return None
    _blocked.add(loop)
    return loop


def run_sync(
    make: Callable[[], Coroutine[Any, Any, T]], ctx: contextvars.Context | None = None
) -> T:
    """Run the coroutine ``make()`` returns to completion and return its result.

    ``ctx`` is the context the run sees (default: a copy of the caller's). The coroutine is
    made only once it is certain to run, so none is ever left un-awaited.
    """
    context = ctx if ctx is not None else contextvars.copy_context()
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _drive(_thread_loop(), make(), context)
    return _background_runner().run(make(), context)


def parameters_of(model: Callable[P, Any]) -> Callable[[Callable[..., T]], Callable[P, T]]:
    """Give the decorated function ``model``'s parameters (with its own return type).

    The function is written ``(*args, **kwargs)`` and hands them to ``model`` (the sync
    form of an async entry point, say); mypy checks its callers against ``model``'s
    parameters and ``inspect.signature`` (``help``) shows them. A wrong argument raises
    ``TypeError`` when ``model`` is called, before anything runs.
    """

    def decorate(function: Callable[..., T]) -> Callable[P, T]:
        returns = inspect.signature(function).return_annotation
        shown = inspect.signature(model).replace(return_annotation=returns)
        function.__signature__ = shown  # type: ignore[attr-defined]
        return function

    return decorate
