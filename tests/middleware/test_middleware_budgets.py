"""The loop's rules on a ``create_agent`` run: under ``usd_budget`` it stops with the same
typed error and partial counts as ``LLMAgent``; the final answer is asked for without tools;
``invoke`` (sync) works too; a cancelled run answers every open call."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from loopkit import calls, final, tool_call

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, ToolLoopMiddleware, usd_budget
from toolloop_lab.errors import ExecutionError
from toolloop_lab.events import Event, LoopFailed, LoopFinished, ModelCallStarted, ToolDispatched


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def script() -> list[Any]:
    return [
        calls(tool_call("lookup", {"key": "a"}, "c1"), tokens=(1_000, 100)),
        calls(tool_call("lookup", {"key": "b"}, "c2"), tokens=(2_000, 100)),
        final("done", (3_000, 100)),
    ]


def model() -> ScriptedChatModel:
    return ScriptedChatModel(script(), model_name="gpt-4o-mini")


def test_usd_budget_stops_both_the_same_way_with_the_partial_counts() -> None:
    limit = Decimal("0.0003")  # call 1 fits (about $0.00021), call 2 goes over it
    with usd_budget(limit), pytest.raises(ExecutionError) as ours:
        LLMAgent(model(), [lookup]).run("look a and b up")

    events: list[Event] = []
    agent = create_agent(
        model(), [lookup], middleware=[ToolLoopMiddleware(observers=[events.append])]
    )

    async def go() -> None:
        with usd_budget(limit):
            await agent.ainvoke({"messages": [HumanMessage("look a and b up")]})

    with pytest.raises(ExecutionError) as theirs:
        asyncio.run(go())

    a, b = ours.value, theirs.value
    assert (b.kind, b.reason) == (a.kind, a.reason) == ("cost", "budget_exhausted")
    assert b.model_calls == a.model_calls == 2
    assert b.rounds == a.rounds == 1
    assert (b.accumulated_prompt, b.accumulated_completion) == (3_000, 200)
    assert (a.accumulated_prompt, a.accumulated_completion) == (3_000, 200)
    assert b.cost_usd == a.cost_usd
    assert b.cost_usd is not None
    assert b.cost_usd > limit
    assert isinstance(events[-1], LoopFailed)
    assert events[-1].reason == "budget_exhausted"
    # the round-2 call it paid for is kept and its call answered as not run
    assert [m.tool_call_id for m in b.messages if isinstance(m, ToolMessage)] == ["c1", "c2"]


def test_round_cap_then_one_final_answer_without_tools() -> None:
    scripted = model()
    events: list[Event] = []
    agent = create_agent(
        scripted,
        [lookup],
        middleware=[ToolLoopMiddleware({"tool_max_rounds": 1}, observers=[events.append])],
    )
    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage("look a and b up")]}))

    # the second reply asked for a tool: not run, answered, and the graph ended there
    assert [c.tool_names for c in scripted.calls] == [("lookup",), ()]
    starts = [e for e in events if isinstance(e, ModelCallStarted)]
    assert [(e.purpose, e.tools) for e in starts] == [("round", ("lookup",)), ("synthesis", ())]
    last = events[-1]
    assert isinstance(last, LoopFinished)
    assert (last.synthesis_reason, last.rounds) == ("round_cap", 1)
    skipped = [e for e in events if isinstance(e, ToolDispatched) and not e.ran]
    assert [e.tool_call_id for e in skipped] == ["c2"]
    assert isinstance(out["messages"][-1], ToolMessage)  # every call id answered


def test_a_sync_invoke_runs_the_same_loop() -> None:
    events: list[Event] = []
    config = AgentConfig(tool_max_rounds=5)
    agent = create_agent(
        model(), [lookup], middleware=[ToolLoopMiddleware(config, observers=[events.append])]
    )
    out = agent.invoke({"messages": [HumanMessage("look a and b up")]})

    assert out["messages"][-1].content == "done"
    last = events[-1]
    assert isinstance(last, LoopFinished)
    assert last.rounds == 3
    assert (last.usage.input_tokens, last.usage.output_tokens) == (6_000, 300)


def test_a_cancelled_run_answers_every_open_call() -> None:
    started = asyncio.Event()

    @tool
    async def wait_forever(key: str) -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    events: list[Event] = []
    agent = create_agent(
        ScriptedChatModel(
            [calls(tool_call("wait_forever", {"key": "a"}, "w1")), final("never")],
            model_name="gpt-4o-mini",
        ),
        [wait_forever],
        middleware=[ToolLoopMiddleware(observers=[events.append])],
    )

    async def go() -> None:
        task = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage("wait")]}))
        await asyncio.wait_for(started.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    answered = [e for e in events if isinstance(e, ToolDispatched)]
    assert [(e.tool_call_id, e.status) for e in answered] == [("w1", "cancelled")]
    last = events[-1]
    assert isinstance(last, LoopFailed)
    assert last.cancelled
