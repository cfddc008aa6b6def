"""``detached``: a wrapped call sees none of the caller's context, and ends with its caller."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Iterator

import pytest

from toolloop_lab._support.detached import (
    aiter_detached,
    arun_detached,
    iter_detached,
    run_detached,
)

CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="unset")


def _seen() -> str:
    return CALLER.get()


def test_a_detached_call_sees_no_context_of_the_caller() -> None:
    token = CALLER.set("the caller's")
    try:
        assert run_detached(_seen) == "unset"

        def values() -> Iterator[str]:
            yield CALLER.get()
            CALLER.set("set inside")  # persists for this iterator's next step only
            yield CALLER.get()

        assert list(iter_detached(values)) == ["unset", "set inside"]
        assert CALLER.get() == "the caller's"
    finally:
        CALLER.reset(token)


async def test_async_detached_calls_see_no_context_of_the_caller() -> None:
    CALLER.set("the caller's")

    async def seen() -> str:
        return CALLER.get()

    async def values() -> AsyncIterator[str]:
        for _ in range(2):
            yield CALLER.get()

    assert await arun_detached(seen) == "unset"
    assert [v async for v in aiter_detached(values)] == ["unset", "unset"]
    assert CALLER.get() == "the caller's"


async def test_errors_reach_the_caller() -> None:
    async def broken() -> AsyncIterator[int]:
        yield 1
        raise ConnectionError("cut")

    got: list[int] = []

    async def drain() -> None:
        async for value in aiter_detached(broken):
            got.append(value)

    with pytest.raises(ConnectionError):
        await drain()
    assert got == [1]

    def fails() -> int:
        raise KeyError("x")

    with pytest.raises(KeyError):
        run_detached(fails)


async def test_closing_a_detached_stream_early_stops_its_producer() -> None:
    stopped = asyncio.Event()

    async def endless() -> AsyncIterator[int]:
        try:
            n = 0
            while True:
                n += 1
                yield n
                await asyncio.sleep(0)
        finally:
            stopped.set()

    stream = aiter_detached(endless)
    assert [await anext(stream), await anext(stream)] == [1, 2]
    await stream.aclose()  # type: ignore[attr-defined]
    assert stopped.is_set()


def test_closing_a_detached_iterator_early_closes_the_inner_one() -> None:
    closed: list[bool] = []

    def endless() -> Iterator[int]:
        try:
            yield from range(1_000_000)
        finally:
            closed.append(True)

    stream = iter_detached(endless)
    assert [next(stream), next(stream)] == [0, 1]
    stream.close()  # type: ignore[attr-defined]
    assert closed == [True]
