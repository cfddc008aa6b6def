"""``AgentConfig(parallel_tool_calls=False)``: a reply's calls run one after another, in
call order, so calls that depend on each other (``cd`` then ``mv`` on one backend) give
the same result every time. Timeouts and cancellation behave as they do for concurrent
calls: a timed-out call is an error result and the next call still runs; a stop keeps the
results of calls that finished and answers the rest, and leaves no task behind.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from hostilekit import (
    SAFETY_S,
    cancel_when,
    cancelled_failure,
    check_events,
    dispatched,
    kinds,
    stubborn_tool,
)
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, tools_from_schema
from toolloop_lab._tools.dispatcher import STOPPED_TEXT
from toolloop_lab.events import Event, ToolDispatched, ToolStarted
from toolloop_lab.workloads import FILE_FUNCTIONS, FileSystem

ORDERED = AgentConfig(parallel_tool_calls=False)

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


class SlowCd(FileSystem):
    """``cd`` takes a while before it changes directory (a remote backend's latency), so a
    ``mv`` started beside it would still see the old working directory."""

    def cd(self, folder: str) -> str:
        time.sleep(0.02)
        return super().cd(folder)


def cd_then_mv() -> Any:
    return calls(
        tool_call("cd", {"folder": "work"}, "cd"),
        tool_call("mv", {"source": "draft.txt", "destination": "final.txt"}, "mv"),
    )


async def run_pair(config: AgentConfig) -> tuple[FileSystem, list[Event]]:
    backend = SlowCd({"/work/draft.txt": "text"})
    events: list[Event] = []
    model = ScriptedChatModel([cd_then_mv(), final("done")], model_name=MODEL)
    agent = LLMAgent(model, tools_from_schema(backend, FILE_FUNCTIONS), config)
    agent.subscribe(events.append)
    await agent.arun("tidy up")
    return backend, events


def order(events: list[Event]) -> list[str]:
    """``start:<id>`` and ``end:<id>`` of every tool call, in the order they happened."""
    out = []
    for event in events:
        if isinstance(event, ToolStarted):
            out.append(f"start:{event.tool_call_id}")
        elif isinstance(event, ToolDispatched):
            out.append(f"end:{event.tool_call_id}")
    return out


async def test_an_order_dependent_pair_gives_the_same_result_every_time() -> None:
    for _ in range(25):
        backend, events = await run_pair(ORDERED)
        assert backend.snapshot() == {"/work/final.txt": "text"}
        assert backend.pwd() == "/work"
        by_id = dispatched(events)
        assert (by_id["cd"].status, by_id["mv"].status) == ("success", "success")
        assert by_id["mv"].content == "moved /work/draft.txt to /work/final.txt"
        assert order(events) == ["start:cd", "end:cd", "start:mv", "end:mv"]
        check_events(events)


async def test_concurrent_calls_overlap_where_ordered_ones_do_not() -> None:
    # The control: by default both calls begin before either ends, so mv may run in the
    # directory cd has not left yet.
    _, events = await run_pair(AgentConfig())
    assert order(events)[:2] == ["start:cd", "start:mv"]


async def test_a_timed_out_call_is_an_error_and_the_next_call_still_runs() -> None:
    never = asyncio.Event()
    ran: list[str] = []

    @tool
    async def first() -> str:
        """Answers at once."""
        ran.append("first")
        return "first done"

    @tool
    async def hang() -> str:
        """Never returns."""
        ran.append("hang")
        await never.wait()
        return "unreachable"

    @tool
    async def third() -> str:
        """Answers at once."""
        ran.append("third")
        return "third done"

    events: list[Event] = []
    reply = calls(
        tool_call("first", {}, "a"), tool_call("hang", {}, "b"), tool_call("third", {}, "c")
    )
    model = ScriptedChatModel([reply, final("done")], model_name=MODEL)
    config = AgentConfig(parallel_tool_calls=False, tool_timeout_s=0.05)
    result = await LLMAgent(model, [first, hang, third], config, observers=[events.append]).arun(
        "go"
    )
    by_id = dispatched(events)
    assert [(i, by_id[i].status, by_id[i].error_reason) for i in "abc"] == [
        ("a", "success", None),
        ("b", "error", "timeout"),
        ("c", "success", None),
    ]
    assert by_id["b"].content == "Error: tool 'hang' timed out after 0.05 s"
    assert ran == ["first", "hang", "third"]
    assert order(events) == ["start:a", "end:a", "start:b", "end:b", "start:c", "end:c"]
    assert [m.tool_call_id for m in result.messages if m.type == "tool"] == ["a", "b", "c"]
    check_events(events)


def _slow_tools(started: asyncio.Event) -> list[BaseTool]:
    @tool
    async def quick(text: str) -> str:
        """Answers at once."""
        return f"quick {text}"

    @tool
    async def slow(text: str) -> str:
        """Waits until cancelled."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    return [quick, slow]


async def test_cancel_mid_call_keeps_what_finished_and_answers_the_rest() -> None:
    events: list[Event] = []
    started = asyncio.Event()
    reply = calls(
        tool_call("quick", {"text": "1"}, "q1"),
        tool_call("slow", {"text": "2"}, "s2"),
        tool_call("quick", {"text": "3"}, "q3"),
        tokens=(50, 5),
    )
    model = ScriptedChatModel([reply], model_name=MODEL)
    agent = LLMAgent(model, _slow_tools(started), ORDERED, observers=[events.append])
    await cancel_when(agent, started.wait)

    cancelled_failure(events)
    by_id = dispatched(events)
    never = "Error: the loop was stopped before this call ran"
    assert [
        (i, by_id[i].status, by_id[i].error_reason, by_id[i].content, by_id[i].ran)
        for i in ("q1", "s2", "q3")
    ] == [
        ("q1", "success", None, "quick 1", True),  # it ran: its result is kept
        ("s2", "cancelled", "cancelled", f"Error: {STOPPED_TEXT}", True),  # stopped running
        ("q3", "error", "cancelled", never, False),
    ]
    # The third call never began: one at a time, and the stop came during the second.
    assert [e.tool_call_id for e in events if isinstance(e, ToolStarted)] == ["q1", "s2"]


async def test_a_tool_that_ignores_cancellation_does_not_hold_up_the_stop() -> None:
    events: list[Event] = []
    tool_, started, release = stubborn_tool()
    reply = calls(tool_call("stubborn", {}, "s1"), tool_call("stubborn", {}, "s2"))
    agent = LLMAgent(
        ScriptedChatModel([reply], model_name=MODEL), [tool_], ORDERED, observers=[events.append]
    )
    before = asyncio.all_tasks()
    await cancel_when(agent, started.wait)

    check_events(events)
    assert {e.error_reason for e in dispatched(events).values()} == {"cancelled"}
    assert kinds(events).count("tool_start") == 1
    stragglers = asyncio.all_tasks() - before
    assert stragglers  # the first tool is still running, on its own
    release.set()
    await asyncio.wait_for(asyncio.gather(*stragglers), SAFETY_S)
