"""Run a wrapped model's call detached from the caller's callbacks and tracing.

A wrapper chat model (the recorder) is a langchain-core chat model itself, so its own run
already reports each call to the caller's callbacks and tracers. The wrapped model's run
inside it would report the same call a second time (a usage handler counts its tokens
twice), because langchain-core hands callbacks down through context variables: the run
config of the enclosing chain or LangGraph node, and configure hooks such as
``get_usage_metadata_callback()``. So the inner call runs in an empty
``contextvars.Context`` (nothing inherited) with LangSmith tracing off: the provider call
runs exactly as it would unwrapped (its own rate limiter, cache and streaming included),
and only the wrapper reports it.

The async stream runs as one producer task in that context and hands its items over a
queue, so the provider's client (httpx, anyio) sees one task from start to end.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable, Iterator
from typing import Any, Final, TypeVar

from langsmith import tracing_context

T = TypeVar("T")

_ITEM: Final = "item"
_END: Final = "end"
_ERROR: Final = "error"


def run_detached(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` with no inherited callbacks, hooks or tracing."""
    return contextvars.Context().run(_untraced, fn, args, kwargs)


def _untraced(fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    with tracing_context(enabled=False):
        return fn(*args, **kwargs)


async def arun_detached(make: Callable[[], Awaitable[T]]) -> T:
    """``await make()`` in its own task with no inherited callbacks, hooks or tracing;
    cancelling the caller cancels that task."""

    async def run() -> T:
        with tracing_context(enabled=False):
            return await make()

    return await asyncio.create_task(run(), context=contextvars.Context())


def iter_detached(make: Callable[[], Iterable[T]]) -> Iterator[T]:
    """The items of ``make()``, each step run with no inherited callbacks, hooks or
    tracing; closing this iterator closes the inner one."""
    context = contextvars.Context()

    def untraced() -> Generator[T, None, None]:
        with tracing_context(enabled=False):
            yield from make()

    inner = context.run(untraced)
    try:
        while True:
            try:
                item = context.run(next, inner)
            except StopIteration:
                return
            yield item
    finally:
        context.run(inner.close)


async def aiter_detached(make: Callable[[], AsyncIterator[T]]) -> AsyncIterator[T]:
    """The items of ``make()``, produced by one task with no inherited callbacks, hooks or
    tracing; closing this iterator (or cancelling its consumer) cancels that task."""
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    async def produce() -> None:
        try:
            with tracing_context(enabled=False):
                async for item in make():
                    queue.put_nowait((_ITEM, item))
        except BaseException as exc:
            queue.put_nowait((_ERROR, exc))
            if not isinstance(exc, Exception):
                raise
        else:
            queue.put_nowait((_END, None))

    task = asyncio.create_task(produce(), context=contextvars.Context())
    try:
        while True:
            kind, value = await queue.get()
            if kind == _END:
                return
            if kind == _ERROR:
                raise value
            yield value
    finally:
        if not task.done():
            task.cancel()
        await asyncio.wait([task])
