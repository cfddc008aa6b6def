"""Real agents watched through the bridge: ``create_agent``, a ``StateGraph`` with a
``ToolNode`` and a hand-written ``bind_tools`` loop, each on our scripted model and on the
real ``ChatOpenAI`` against the loopback stub, invoked and streamed.

What they show: the run's counts and cost equal the sums of what the model reported; every
tool call gets exactly one ``tool_dispatch``, error statuses kept (a handled
``ToolException``, an unknown tool the framework or the loop answered itself); the view is
updated during the run (after every event, and while a reply is still streaming); a
failure keeps its partial counts.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import openai
import pytest
from bridgekit import (
    AGENTS,
    FINAL_TEXT,
    ROUND_ONE,
    TOOLS,
    AgentKind,
    Snapshots,
    dispatches_by_call,
    prepare,
    run_agent,
)
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from loopkit import wait_until
from stubs.clients import chat_openai
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage
from stubs.prices import openai_cost
from stubs.sse import StreamFault, StreamPlan

from toolloop_lab import EventBridge, watch
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab.events import (
    BudgetGate,
    LoopFailed,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    ModelCallStarted,
    ModelDelta,
    ToolStarted,
    transcript,
)

Provider = Literal["scripted", "openai"]


def _projection(messages: Any) -> list[tuple[str, str, tuple[str, ...], str | None]]:
    """What two transcripts must agree on: type, text, tool-call ids, answered id."""
    return [
        (
            m.type.removesuffix("Chunk").lower().replace("aimessage", "ai"),
            m.text,
            tuple(c["id"] for c in getattr(m, "tool_calls", ())),
            getattr(m, "tool_call_id", None),
        )
        for m in messages
    ]


# -- counts, costs, dispatches, the live view: 3 agents x 2 models x invoked/streamed ----------
@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("provider", ["scripted", "openai"])
@pytest.mark.parametrize("kind", AGENTS)
async def test_a_watched_agent_reports_what_the_model_and_tools_did(
    kind: AgentKind, provider: Provider, stream: bool, oai: OpenAIStub
) -> None:
    oai.chunk_interval = 0
    model, expected = prepare(provider, oai, streaming=stream)
    seen = Snapshots()
    with watch(seen):
        messages = await run_agent(kind, model, stream=stream)
    events = seen.events

    # one run, from the bridge, with no gate of ours shown as passed
    [start] = [e for e in events if isinstance(e, LoopStarted)]
    assert start.source == "langchain"
    assert (start.max_rounds, start.token_budget, start.usd_limit) == (None, None, None)
    assert start.context_window is None
    assert {e.run_id for e in events} == {start.run_id}
    assert not any(isinstance(e, BudgetGate) for e in events)

    # the counts are the sums of what the model reported
    [finish] = [e for e in events if isinstance(e, LoopFinished)]
    calls = seen.model_calls
    assert len(calls) == expected.calls
    assert sum(c.usage.input_tokens for c in calls) == expected.input_tokens
    assert sum(c.usage.output_tokens for c in calls) == expected.output_tokens
    assert finish.usage.input_tokens == expected.input_tokens
    assert finish.usage.output_tokens == expected.output_tokens
    assert finish.usage.requests == expected.calls
    assert finish.usage.estimated is False
    assert finish.usage.cost_usd == expected.cost
    assert calls[-1].accumulated == finish.usage
    assert (finish.rounds, finish.outcome, finish.final_text) == (2, "final_answer", FINAL_TEXT)

    # one dispatch per tool call, statuses kept; the unknown tool is an error of its call,
    # as the loop reports one (it never started)
    by_call = dispatches_by_call(events)
    assert set(by_call) == set(expected.call_ids)
    assert all(len(found) == 1 for found in by_call.values())
    add_id, explode_id, nope_id = expected.call_ids
    assert (by_call[add_id][0].status, by_call[add_id][0].content) == ("success", "5")
    assert by_call[explode_id][0].status == "error"
    assert "exploded: why" in by_call[explode_id][0].content
    assert by_call[explode_id][0].error_reason == "tool_error"
    nope = by_call[nope_id][0]
    assert (nope.status, nope.error_reason, nope.ran) == ("error", "not_available", True)
    started = [e.tool_call_id for e in events if isinstance(e, ToolStarted)]
    assert sorted(started) == sorted([add_id, explode_id])
    assert [c.name for c in calls[0].tool_calls] == [name for name, _ in ROUND_ONE]

    # streamed replies arrive as coalesced deltas that add up to the reply
    deltas = [e for e in events if isinstance(e, ModelDelta)]
    if stream:
        assert "".join(d.text for d in deltas if d.call == calls[-1].call) == FINAL_TEXT
        assert all(c.first_token_s is not None for c in calls)
    else:
        assert deltas == []

    # the conversation the events carry is the agent's own
    assert _projection(transcript(events)) == _projection(messages)

    # the view was updated during the run, not only at its end
    statuses = [s.status for s in seen.seen]
    assert statuses[-1] == "finished"
    assert set(statuses[:-1]) == {"running"}
    tokens = [s.input_tokens for s in seen.seen]
    assert tokens == sorted(tokens)
    second_call = next(i for i, e in enumerate(events) if e is calls[1])
    before = seen.seen[second_call - 1]
    assert (before.rounds, before.tools_done) == (2, 3)  # round 1's results, round 2 started
    assert before.input_tokens == calls[0].usage.input_tokens


# -- the view while a reply is still streaming ---------------------------------------------
@pytest.mark.parametrize("kind", AGENTS)
async def test_the_view_shows_a_reply_while_it_streams(kind: AgentKind, oai: OpenAIStub) -> None:
    oai.chunk_interval = 0
    oai.fragment_chars = 5
    oai.reply(tool_calls=[OpenAIToolCall("add", {"a": 2, "b": 3})], usage=OpenAIUsage(40, 9))
    oai.reply(
        text=FINAL_TEXT,
        usage=OpenAIUsage(60, 9),
        stream=StreamPlan(interval=0.06, hold_after=5),  # a role chunk, then 4 fragments
    )
    model = chat_openai(oai, streaming=True, stream_usage=True)
    seen = Snapshots()
    debugger = LoopDebugger()
    with watch(seen, debugger):
        task = asyncio.create_task(run_agent(kind, model, stream=True))
        assert await asyncio.to_thread(oai.wait_held, 5.0)
        shown = await asyncio.to_thread(
            wait_until, lambda: bool(seen.view.rounds and seen.view.rounds[-1].streamed_text)
        )
        assert shown
        assert not task.done()
        for view in (seen.view, debugger.view):
            row = view.rounds[-1]
            assert view.status == "running"
            assert (row.number, row.calling) == (2, True)
            assert FINAL_TEXT.startswith(row.streamed_text)
            assert len(row.streamed_text) < len(FINAL_TEXT)
            assert [t.status for t in view.rounds[0].tools] == ["success"]
        assert "running" in debugger.summary()
        oai.release()
        await task
    assert seen.view.status == debugger.view.status == "finished"
    assert seen.view.rounds[-1].text == FINAL_TEXT
    assert debugger.view.usage == seen.view.usage


# -- failures keep their partial counts ----------------------------------------------------
@pytest.mark.parametrize("midstream", [False, True], ids=["http_500", "dropped_stream"])
@pytest.mark.parametrize("kind", AGENTS)
async def test_a_failed_run_keeps_its_partial_counts(
    kind: AgentKind, midstream: bool, oai: OpenAIStub
) -> None:
    oai.chunk_interval = 0
    ids = oai.reply(tool_calls=[OpenAIToolCall("add", {"a": 2, "b": 3})], usage=OpenAIUsage(40, 9))
    first_cost = openai_cost(oai.reported)
    if midstream:
        oai.fragment_chars = 4
        plan = StreamPlan(fault=StreamFault(after=4, how="drop"))
        oai.reply(text=FINAL_TEXT, usage=OpenAIUsage(60, 9), stream=plan)
    else:
        oai.fault(500, "the provider is down")
    options = {"streaming": True, "stream_usage": True} if midstream else {}
    model = chat_openai(oai, **options)
    seen = Snapshots()
    with watch(seen), pytest.raises(openai.APIError) as raised:
        await run_agent(kind, model, stream=midstream)

    [failure] = [e for e in seen.events if isinstance(e, LoopFailed)]
    assert failure.outcome == "failed"
    assert failure.rounds == 1
    assert (failure.usage.input_tokens, failure.usage.output_tokens) == (40, 9)
    assert failure.usage.cost_usd == first_cost
    assert failure.any_invocation_made is True
    assert failure.error_type == type(raised.value).__name__
    assert [d.tool_call_id for ds in dispatches_by_call(seen.events).values() for d in ds] == ids
    starts = [e for e in seen.events if isinstance(e, ModelCallStarted)]
    assert len(starts) == 2  # the second call was sent ...
    assert len(seen.model_calls) == 1  # ... and never returned
    if midstream:
        assert failure.partial_text
        assert FINAL_TEXT.startswith(failure.partial_text)
    else:
        assert failure.partial_text is None
    assert seen.view.status == "failed"
    assert seen.view.failure is failure


# -- other ways in ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["create_agent", "state_graph"])
async def test_explicit_callbacks_see_the_same_run_as_watch(kind: AgentKind) -> None:
    runs = []
    for use_watch in (True, False):
        model, _ = prepare("scripted", None, streaming=False)
        seen = Snapshots()
        if use_watch:
            with watch(seen):
                await run_agent(kind, model, stream=False)
        else:
            await run_agent(kind, model, stream=False, config={"callbacks": [EventBridge(seen)]})
        runs.append(seen.events)
    # the same events (tools run concurrently, so their events may interleave differently)
    assert sorted(e.kind for e in runs[0]) == sorted(e.kind for e in runs[1])
    assert len(runs[0]) > 10
    ends = [next(e for e in run if isinstance(e, LoopFinished)) for run in runs]
    assert ends[0].usage == ends[1].usage


def test_a_sync_create_agent_with_parallel_tools_is_seen_whole() -> None:
    # ToolNode runs a sync agent's tool calls in a thread pool: callbacks from threads
    model, expected = prepare("scripted", None, streaming=False)
    seen = Snapshots()
    with watch(seen):
        create_agent(model, TOOLS).invoke({"messages": [HumanMessage("Add 2 and 3.")]})
    by_call = dispatches_by_call(seen.events)
    assert sorted(by_call) == sorted(expected.call_ids)
    assert all(len(found) == 1 for found in by_call.values())
    assert seen.view.status == "finished"
    assert seen.view.usage.input_tokens == expected.input_tokens


async def test_astream_events_is_seen_as_it_streams(oai: OpenAIStub) -> None:
    oai.chunk_interval = 0
    model, expected = prepare("openai", oai, streaming=True)
    seen = Snapshots()
    streamed = []
    with watch(seen):
        graph = create_agent(model, TOOLS)
        async for item in graph.astream_events(
            {"messages": [HumanMessage("Add 2 and 3.")]}, version="v2"
        ):
            if item["event"] == "on_chat_model_stream":
                streamed.append(len(seen.events))
    deltas = [e for e in seen.events if isinstance(e, ModelDelta)]
    assert "".join(d.text for d in deltas if d.call == 2) == FINAL_TEXT
    assert streamed  # the caller's own stream ran alongside the bridge's events
    [finish] = [e for e in seen.events if isinstance(e, LoopFinished)]
    assert finish.usage.input_tokens == expected.input_tokens
    assert finish.usage.cost_usd == expected.cost
    calls = [e for e in seen.events if isinstance(e, ModelCalled)]
    assert len(calls) == expected.calls
