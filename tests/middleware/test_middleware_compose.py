"""``ToolLoopMiddleware`` composed with LangChain's own middleware, in the documented order
(ours first: the outermost, so it sees each model call and tool call as the middleware after
it shape them), and what each one does as it shows in the events."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRetryMiddleware, ToolCallLimitMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from loopkit import calls, final, tool_call

from toolloop_lab import ScriptedChatModel, ToolLoopMiddleware
from toolloop_lab.errors import ToolLoopError
from toolloop_lab.events import Event, LoopFinished, ModelCalled, ToolDispatched


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _run(model: ScriptedChatModel, *after: Any) -> tuple[dict[str, Any], list[Event]]:
    events: list[Event] = []
    agent = create_agent(
        model, [lookup], middleware=[ToolLoopMiddleware(observers=[events.append]), *after]
    )
    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage("look a and b up")]}))
    return out, events


def test_model_retry_after_it_retries_inside_one_model_call() -> None:
    attempts: list[int] = []

    def flaky(messages: list[BaseMessage], bound: Any) -> AIMessage:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("provider hiccup")
        return final("done", (40, 7))

    model = ScriptedChatModel([flaky, flaky], model_name="gpt-4o-mini")
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0.0, jitter=False)
    out, events = _run(model, retry)

    assert out["messages"][-1].content == "done"
    assert len(attempts) == 2  # the provider was asked twice ...
    called = [e for e in events if isinstance(e, ModelCalled)]
    assert len(called) == 1  # ... within the one model call of the loop's round
    assert (called[0].usage.input_tokens, called[0].usage.output_tokens) == (40, 7)
    assert isinstance(events[-1], LoopFinished)
    assert events[-1].outcome == "final_answer"


def test_model_retry_without_it_the_failure_ends_the_run() -> None:
    """The same flaky provider without the retry: the loop's own rule, a typed error."""

    def flaky(messages: list[BaseMessage], bound: Any) -> AIMessage:
        raise ConnectionError("provider hiccup")

    model = ScriptedChatModel([flaky], model_name="gpt-4o-mini")
    with pytest.raises(ToolLoopError) as caught:
        _run(model)
    assert caught.value.model_calls == 0
    assert caught.value.events[-1].kind == "loop_failure"


def test_a_tool_call_limit_answers_calls_past_it_and_the_events_say_so() -> None:
    model = ScriptedChatModel(
        [
            calls(tool_call("lookup", {"key": "a"}, "c1"), tool_call("lookup", {"key": "b"}, "c2")),
            final("done"),
        ],
        model_name="gpt-4o-mini",
    )
    _out, events = _run(model, ToolCallLimitMiddleware(run_limit=1))

    dispatched = {e.tool_call_id: e for e in events if isinstance(e, ToolDispatched)}
    assert (dispatched["c1"].status, dispatched["c1"].ran) == ("success", True)
    # the limit answered c2 without running it: the framework's answer, not a tool's
    assert (dispatched["c2"].status, dispatched["c2"].ran) == ("error", False)
    assert dispatched["c2"].error_reason == "unknown"
    assert "limit" in dispatched["c2"].content.lower()
    assert isinstance(events[-1], LoopFinished)
    assert events[-1].rounds == 2


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def boom(x: str) -> str:
    """Always fails."""
    raise ValueError("kaput")


def test_where_langchain_answers_a_call_itself_and_where_the_loop_does() -> None:
    """As the how-to page says: LangChain's ToolNode answers arguments its schema refuses
    with its own text (a ``tool_error``, where ``LLMAgent`` says ``invalid_arguments``); a
    tool that raises and an unreadable call read as under ``LLMAgent``, and a reply of
    unreadable calls only goes back to the model, as in the loop."""

    def script() -> list[Any]:
        return [
            calls(tool_call("add", {"a": "x"}, "c1"), tool_call("boom", {"x": "1"}, "c2")),
            AIMessage(
                "",
                invalid_tool_calls=[
                    {
                        "name": "add",
                        "args": "{bad",
                        "id": "c3",
                        "error": "bad json",
                        "type": "invalid_tool_call",
                    }
                ],
            ),
            final("done"),
        ]

    ours: list[Event] = []
    from toolloop_lab import LLMAgent

    LLMAgent(
        ScriptedChatModel(script(), model_name="gpt-4o-mini"), [add, boom], observers=[ours.append]
    ).run("go")
    theirs: list[Event] = []
    agent = create_agent(
        ScriptedChatModel(script(), model_name="gpt-4o-mini"),
        [add, boom],
        middleware=[ToolLoopMiddleware(observers=[theirs.append])],
    )
    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage("go")]}))

    def reasons(events: list[Event]) -> dict[str, str | None]:
        return {e.tool_call_id: e.error_reason for e in events if isinstance(e, ToolDispatched)}

    assert reasons(ours) == {"c1": "invalid_arguments", "c2": "tool_error", "c3": "invalid_call"}
    assert reasons(theirs) == {"c1": "tool_error", "c2": "tool_error", "c3": "invalid_call"}
    said = {e.tool_call_id: e.content for e in theirs if isinstance(e, ToolDispatched)}
    assert said["c1"].startswith("Error invoking tool 'add'")  # LangChain's own words
    assert out["messages"][-1].content == "done"
    assert [e.kind for e in theirs].count("round_start") == 3
    assert theirs[-1].kind == ours[-1].kind == "loop_finish"


def test_human_in_the_loop_after_it_a_rejection_reads_as_the_frameworks_answer() -> None:
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    events: list[Event] = []
    agent = create_agent(
        ScriptedChatModel(
            [calls(tool_call("lookup", {"key": "a"}, "c1")), final("done")],
            model_name="gpt-4o-mini",
        ),
        [lookup],
        middleware=[
            ToolLoopMiddleware(observers=[events.append]),
            HumanInTheLoopMiddleware(interrupt_on={"lookup": True}),
        ],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t1"}}

    async def go() -> tuple[dict[str, Any], list[str]]:
        first = await agent.ainvoke({"messages": [HumanMessage("look a up")]}, config)
        assert "__interrupt__" in first
        waiting = [e.kind for e in events]
        decision = {"decisions": [{"type": "reject", "message": "not today"}]}
        return await agent.ainvoke(Command(resume=decision), config), waiting

    out, waiting = asyncio.run(go())

    # while the graph waits for the person, the run is open: no final event yet
    assert waiting[-1] == "model_call"
    assert out["messages"][-1].content == "done"
    [answer] = [e for e in events if isinstance(e, ToolDispatched)]
    assert (answer.tool_call_id, answer.status, answer.ran) == ("c1", "error", False)
    assert answer.error_reason == "unknown"
    assert "not today" in answer.content
    assert isinstance(events[-1], LoopFinished)
    assert [e.kind for e in events].count("loop_start") == 1  # one run across the resume
