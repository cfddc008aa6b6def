"""Hostile tools: tools that raise anything, return anything, hang, block, or stop the
process, and exactly what the loop makes of each.

Every tool failure becomes an error ``ToolMessage`` the model reads (``ToolDispatched``
says why in ``error_reason``) and the loop goes on; only ``KeyboardInterrupt``,
``SystemExit`` and other non-``Exception`` errors propagate, unwrapped, after the loop
answered every call and emitted ``LoopFailed``.

Related cases elsewhere: a tool's own TimeoutError, artifacts, a ToolMessage returned by
a tool (tests/tools/test_dispatch.py, tests/engine/test_loop_edges.py).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import logging
import math
import threading
from decimal import Decimal
from typing import Any

import pytest
from hostilekit import SAFETY_S, check_events, check_result, dispatched, kinds, only
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, ToolLoopResult
from toolloop_lab._support.errortext import NO_MESSAGE
from toolloop_lab.events import Event, LoopFailed, ToolDispatched


async def _one_call(
    tool_: BaseTool, args: dict[str, Any] | None = None, config: AgentConfig | None = None
) -> tuple[ToolMessage, ToolDispatched, ToolLoopResult]:
    """Run one call of ``tool_`` then a final answer; the call's message and event."""
    model = ScriptedChatModel(
        [calls(tool_call(tool_.name, args or {}, "t1")), final("went on")], model_name=MODEL
    )
    agent = LLMAgent(model, [tool_], config or AgentConfig(tool_timeout_s=SAFETY_S))
    result = await asyncio.wait_for(agent.arun("go"), SAFETY_S)
    check_result(result)
    assert result.final_response.text == "went on"  # the loop always goes on
    message = only(m for m in result.messages if isinstance(m, ToolMessage))
    return message, dispatched(result.events)["t1"], result


def _sync(func: Any, name: str = "t", **kwargs: Any) -> BaseTool:
    return StructuredTool.from_function(func, name=name, description="A hostile tool.", **kwargs)


# -- tools that raise ---------------------------------------------------------------------


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


def _raiser(exc: BaseException) -> Any:
    def t() -> str:
        raise exc

    return t


RAISES = [
    (RuntimeError("disk full"), "RuntimeError: disk full"),
    (ValueError(""), "ValueError"),  # no message: the class alone, no empty ": "
    (KeyError("missing"), "KeyError: 'missing'"),
    (ZeroDivisionError("division by zero"), "ZeroDivisionError: division by zero"),
    (RecursionError("too deep"), "RecursionError: too deep"),
    (MemoryError(), "MemoryError"),
    # langchain-core turns it into a RuntimeError raised from it
    (StopIteration(), "RuntimeError (caused by StopIteration)"),
    (ToolException("quota exceeded"), "ToolException: quota exceeded"),
    (Unprintable(), "Unprintable: <unprintable Unprintable>"),
]


@pytest.mark.parametrize(("exc", "text"), RAISES, ids=[type(e).__name__ for e, _ in RAISES])
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_tool_that_raises(exc: BaseException, text: str, kind: str) -> None:
    if kind == "sync":
        tool_ = _sync(_raiser(exc))
    else:

        async def t() -> str:
            raise exc

        tool_ = StructuredTool.from_function(coroutine=t, name="t", description="Raises.")
        if isinstance(exc, StopIteration):
            text = "RuntimeError: coroutine raised StopIteration"  # Python's own PEP 479
    message, event, _ = await _one_call(tool_)
    assert (message.status, message.content) == ("error", f"Error: tool 't' raised {text}")
    assert event.error_reason == "tool_error"


@pytest.mark.parametrize(
    ("handler", "text"),
    [
        (True, "quota exceeded"),
        ("Try again tomorrow.", "Try again tomorrow."),
        (lambda e: f"handled: {e}", "handled: quota exceeded"),
    ],
    ids=["true", "text", "callable"],
)
async def test_a_tool_exception_its_own_handler_turns_into_text_is_still_an_error(
    handler: Any, text: str
) -> None:
    # langchain-core would return the handler's text as a plain success string
    tool_ = _sync(_raiser(ToolException("quota exceeded")), handle_tool_error=handler)
    message, event, _ = await _one_call(tool_)
    assert (message.status, message.content) == ("error", text)
    assert event.error_reason == "tool_error"


async def test_a_validation_handler_does_not_hide_bad_arguments() -> None:
    def t(n: int) -> str:
        return str(n)

    tool_ = _sync(t, handle_validation_error=True)
    message, event, _ = await _one_call(tool_, {"n": "many"})
    assert message.status == "error"
    assert message.content == (
        "Error: invalid arguments for tool 't': n: Input should be a valid integer, unable to "
        "parse string as an integer"
    )
    assert event.error_reason == "invalid_arguments"


async def test_a_tool_returning_an_error_tool_message_is_an_error() -> None:
    def t() -> ToolMessage:
        return ToolMessage("backend refused", tool_call_id="x", status="error")

    message, event, _ = await _one_call(_sync(t))
    assert (message.status, message.content, event.error_reason) == (
        "error",
        "backend refused",
        "tool_error",
    )


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_cancelled_error_raised_inside_a_tool(kind: str) -> None:
    if kind == "sync":
        tool_ = _sync(_raiser(asyncio.CancelledError()))
    else:

        async def t() -> str:
            raise asyncio.CancelledError

        tool_ = StructuredTool.from_function(coroutine=t, name="t", description="Cancels.")
    message, event, _ = await _one_call(tool_)
    assert (message.status, message.content) == (
        "error",
        "Error: tool 't' was cancelled from inside",
    )
    assert event.error_reason == "tool_cancelled"


async def test_a_tool_that_cancels_a_task_it_awaits() -> None:
    async def t() -> str:
        inner = asyncio.create_task(asyncio.sleep(SAFETY_S))
        inner.cancel()
        return str(await inner)

    tool_ = StructuredTool.from_function(coroutine=t, name="t", description="Awaits a cancel.")
    message, event, _ = await _one_call(tool_)
    assert (message.status, event.error_reason) == ("error", "tool_cancelled")


# -- tools that return anything -----------------------------------------------------------


class Opaque:
    def __init__(self) -> None:
        self.level = Decimal("0.5")


class Hostile:
    """Every attribute lookup that is not found raises something else than AttributeError."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name}")


class BadStr:
    def __str__(self) -> str:
        raise ValueError("no str")


class BadMapping(dict[str, int]):
    def items(self) -> Any:
        raise RuntimeError("cannot list my items")


def _cycle() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


RETURNS: list[tuple[str, Any, str]] = [
    (
        "dict",
        {"b": 2, "a": [1, {"d": None, "c": True}]},
        '{"a": [1, {"c": true, "d": null}], "b": 2}',
    ),
    ("list", [3, "two", 1.5], '[3, "two", 1.5]'),
    ("tuple", (1, (2,)), "[1, [2]]"),
    ("none", None, "null"),
    ("empty-string", "", ""),
    ("bytes-utf8", b"caf\xc3\xa9", '"café"'),
    ("bytes-binary", b"\x00\xff\xfe", '{"__bytes_base64__": "AP/+"}'),
    ("int", 10**30, "1000000000000000000000000000000"),
    ("nan", math.nan, '"NaN"'),
    ("decimal", Decimal("0.10"), '"0.10"'),
    ("datetime", dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), '"2026-01-02T03:04:05+00:00"'),
    ("set", {"b", "a"}, '["a", "b"]'),
    ("object", Opaque(), f'{{"__type__": "{__name__}.Opaque", "attributes": {{"level": "0.5"}}}}'),
    ("hostile-getattr", Hostile(), f'{{"__type__": "{__name__}.Hostile"}}'),
    ("bad-str", BadStr(), f'{{"__type__": "{__name__}.BadStr"}}'),
    ("cycle", _cycle(), "[" * 65 + '"<nested too deep>"' + "]" * 65),
    ("lone-surrogate", "half \ud83d", "half \ud83d"),
]


@pytest.mark.parametrize(
    ("value", "text"), [(v, t) for _, v, t in RETURNS], ids=[n for n, _, _ in RETURNS]
)
async def test_a_tool_may_return_anything(value: Any, text: str) -> None:
    message, event, _ = await _one_call(_sync(lambda: value))
    assert (message.status, message.content, event.content) == ("success", text, text)
    assert event.output_chars == len(text)


async def test_a_result_with_no_text_form_is_the_tools_error() -> None:
    message, event, _ = await _one_call(_sync(lambda: BadMapping(a=1)))
    assert message.status == "error"
    assert message.content == (
        "Error: tool 't' returned a BadMapping that cannot be turned into text: "
        "RuntimeError: cannot list my items"
    )
    assert event.error_reason == "bad_output"


# -- tools that hang ----------------------------------------------------------------------


@pytest.mark.usefixtures("no_leftover_tasks")
async def test_a_hanging_async_tool_times_out() -> None:
    never = asyncio.Event()

    async def t() -> str:
        await never.wait()
        return "unreachable"

    tool_ = StructuredTool.from_function(coroutine=t, name="t", description="Hangs.")
    message, event, _ = await _one_call(tool_, config=AgentConfig(tool_timeout_s=0.05))
    assert (message.content, event.error_reason) == (
        "Error: tool 't' timed out after 0.05 s",
        "timeout",
    )


@pytest.mark.usefixtures("no_leftover_tasks")
async def test_a_hanging_sync_tool_times_out_and_the_loop_goes_on() -> None:
    release = threading.Event()
    finished = threading.Event()

    def t() -> str:
        release.wait(SAFETY_S)
        finished.set()
        return "late"

    try:
        message, event, _ = await _one_call(_sync(t), config=AgentConfig(tool_timeout_s=0.05))
        assert not finished.is_set()  # the loop went on while the thread still blocked
    finally:
        release.set()
    assert (message.content, event.error_reason) == (
        "Error: tool 't' timed out after 0.05 s",
        "timeout",
    )
    await asyncio.to_thread(finished.wait, SAFETY_S)


@pytest.mark.usefixtures("no_leftover_tasks")
async def test_a_tool_that_swallows_cancellation_cannot_hang_the_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = asyncio.Event()
    swallowed = 0

    async def t() -> str:
        nonlocal swallowed
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                swallowed += 1  # a bare except in a retry loop
        return "finally"

    tool_ = StructuredTool.from_function(coroutine=t, name="t", description="Stubborn.")
    with caplog.at_level(logging.WARNING, logger="toolloop_lab"):
        message, event, _ = await _one_call(tool_, config=AgentConfig(tool_timeout_s=0.05))
    assert message.content == (
        "Error: tool 't' timed out after 0.05 s and ignored cancellation; it may still be running"
    )
    assert event.error_reason == "timeout"
    assert swallowed >= 1
    assert "a tool ignored cancellation and is left running" in caplog.text
    # the abandoned task still ends once it chooses to, and nothing is left behind
    leftover = {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}
    release.set()
    await asyncio.wait_for(asyncio.gather(*leftover), SAFETY_S)


# -- blocking sync tools ------------------------------------------------------------------


@pytest.mark.usefixtures("no_leftover_tasks")
async def test_a_blocking_sync_tool_runs_off_the_event_loop() -> None:
    unblock = threading.Event()
    ticks = 0
    tool_thread: list[int] = []

    def t() -> str:
        tool_thread.append(threading.get_ident())
        # blocks until the *event loop* has made progress: impossible if it ran on the loop
        return "unblocked" if unblock.wait(SAFETY_S) else "the loop was blocked"

    async def ticker() -> None:
        nonlocal ticks
        while not unblock.is_set():
            ticks += 1
            if ticks == 25:
                unblock.set()
            await asyncio.sleep(0)

    other = asyncio.create_task(ticker())
    message, _, _ = await _one_call(_sync(t))
    await other
    assert message.content == "unblocked"
    assert ticks == 25
    assert tool_thread != [threading.get_ident()]


# -- KeyboardInterrupt, SystemExit and other BaseExceptions propagate ---------------------


class Abort(BaseException):
    """A library's own control-flow exception (not an Exception)."""


@pytest.mark.parametrize(
    "exc", [KeyboardInterrupt(), SystemExit(3)], ids=["KeyboardInterrupt", "SystemExit"]
)
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_interrupts_from_a_tool_propagate_after_a_final_event(
    exc: BaseException, kind: str
) -> None:
    # A sync run: asyncio re-raises an interrupt out of the event loop from whichever task
    # raised it (for an async tool that is langchain-core's own task), so the loop that
    # runs the agent is the one that must survive it.
    events: list[Event] = []
    model = ScriptedChatModel([calls(tool_call("t", {}, "t1"), tokens=(30, 7))], model_name=MODEL)
    agent = LLMAgent(model, [_tool_raising(exc, kind)], observers=[events.append])
    with pytest.raises(type(exc)) as info:
        agent.run("go")

    assert info.value is exc  # unwrapped
    failed = check_events(events)
    assert isinstance(failed, LoopFailed)
    assert (failed.cancelled, failed.rounds) == (True, 0)
    if kind == "sync":  # the loop's own task saw it
        said = str(exc) or NO_MESSAGE  # an interrupt's context is no cause of it
        assert (failed.error_type, failed.message) == (type(exc).__name__, said)
    else:  # it escaped through langchain-core's task: the run was cancelled because of it
        assert (failed.error_type, failed.message) == (
            "CancelledError",
            f"interrupted by {type(exc).__name__}",
        )
    assert (failed.usage.input_tokens, failed.usage.output_tokens) == (30, 7)
    closed = dispatched(events)["t1"]  # it ran: never "not run"
    if kind == "sync":  # it raised in the loop's sight
        assert (closed.status, closed.error_reason, closed.ran) == ("error", "tool_error", True)
        said = f"Error: tool 't' raised {type(exc).__name__}, which stopped the loop"
        assert closed.content == said
    else:  # the run was stopped while it ran
        assert (closed.status, closed.error_reason, closed.ran) == ("cancelled", "cancelled", True)
    assert kinds(events) == [
        "loop_start",
        "round_start",
        "model_call_start",
        "model_call",
        "tool_start",
        "tool_dispatch",
        "loop_failure",
    ]


def _tool_raising(exc: BaseException, kind: str) -> BaseTool:
    if kind == "sync":
        return _sync(_raiser(exc))

    async def t() -> str:
        raise exc

    return StructuredTool.from_function(coroutine=t, name="t", description="Stops.")


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.usefixtures("no_leftover_tasks")
async def test_a_non_exception_base_exception_propagates_after_a_final_event(kind: str) -> None:
    events: list[Event] = []
    exc = Abort("stop")
    model = ScriptedChatModel([calls(tool_call("t", {}, "t1"), tokens=(30, 7))], model_name=MODEL)
    agent = LLMAgent(model, [_tool_raising(exc, kind)], observers=[events.append])
    with pytest.raises(Abort) as info:
        await agent.arun("go")

    assert info.value is exc
    failed = check_events(events)
    assert isinstance(failed, LoopFailed)
    assert (failed.error_type, failed.message, failed.cancelled) == ("Abort", "stop", False)
    closed = dispatched(events)["t1"]  # it ran, and raised: never "not run"
    assert (closed.status, closed.error_reason, closed.content, closed.ran) == (
        "error",
        "tool_error",
        "Error: tool 't' raised Abort, which stopped the loop",
        True,
    )


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3)], ids=["ki", "exit"])
def test_an_interrupt_in_one_of_many_parallel_calls(
    exc: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    # sync run: asyncio lets an interrupt escape the event loop, so it needs its own loop
    events: list[Event] = []
    done_first = threading.Event()

    def fine() -> str:
        done_first.set()
        return "fine result"

    def stop() -> str:
        done_first.wait(SAFETY_S)  # the other call finished first, for sure
        raise exc

    async def slow() -> str:
        await asyncio.sleep(SAFETY_S)
        return "never"

    tools = [
        _sync(fine, "fine"),
        _sync(stop, "stop"),
        StructuredTool.from_function(coroutine=slow, name="slow", description="Slow."),
    ]
    reply = calls(
        tool_call("fine", {}, "a"), tool_call("stop", {}, "b"), tool_call("slow", {}, "c")
    )
    model = ScriptedChatModel([reply], model_name=MODEL)
    agent = LLMAgent(model, tools, observers=[events.append])
    with caplog.at_level(logging.ERROR, logger="asyncio"), pytest.raises(type(exc)):
        agent.run("go")
    gc.collect()

    failed = check_events(events)
    assert isinstance(failed, LoopFailed)
    assert (failed.error_type, failed.cancelled) == (type(exc).__name__, True)
    by_id = dispatched(events)
    assert (by_id["a"].status, by_id["a"].content) == ("success", "fine result")  # it ran
    assert [(by_id[i].status, by_id[i].error_reason, by_id[i].ran) for i in "bc"] == [
        ("error", "tool_error", True),  # it raised the interrupt
        ("cancelled", "cancelled", True),  # it was running when the loop stopped
    ]
    assert "never retrieved" not in caplog.text
    assert "Task was destroyed" not in caplog.text
