"""A real ``LLMAgent`` on scripted models, watched by :class:`OTelObserver`.

Every built-in catalog scenario (happy paths, round cap, stuck model, token budget,
pruning, unknown tool, model failure, bad config, USD budget) runs with the observer
attached, and its spans are checked against the run's own events: every span ended, one
trace, one span per model call and per tool call, token and cost sums equal to the run's
totals, the outcome and the error status. A cancelled run and content capture on a real
transcript are covered too.
"""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from loopkit import MODEL, calls, final, tool_call
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from otelkit import shape

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, echo_tool, usd_budget
from toolloop_lab.errors import ToolLoopLabError
from toolloop_lab.events import (
    FAILED_OUTCOMES,
    Event,
    LoopFailed,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    ModelCallStarted,
    ToolDispatched,
    transcript,
)
from toolloop_lab.lab import Scenario, catalog
from toolloop_lab.otel import OTelObserver, export_events

pytest_plugins = ("otelkit",)  # the exporter and provider fixtures


def _op(spans: tuple[ReadableSpan, ...], operation: str) -> list[ReadableSpan]:
    return [s for s in spans if (s.attributes or {}).get("gen_ai.operation.name") == operation]


async def _run(scenario: Scenario, observer: OTelObserver) -> list[Event]:
    events: list[Event] = []
    agent = scenario.build_agent([observer, events.append])
    try:
        with usd_budget(scenario.usd_limit, prices=scenario.prices):
            await agent.arun(scenario.prompt)
    except ToolLoopLabError:
        pass  # failing scenarios fail on purpose; their events are what is checked
    return events


@pytest.mark.parametrize("scenario", catalog(), ids=lambda s: s.name)
async def test_catalog_runs_become_complete_span_trees_that_add_up(
    scenario: Scenario, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    observer = OTelObserver(provider, use_current_context=False)
    events = await _run(scenario, observer)
    spans = exporter.get_finished_spans()
    end = events[-1]
    assert isinstance(end, (LoopFinished, LoopFailed))

    assert observer.open_runs == ()
    assert observer.spans_started == len(spans)
    (agent,) = _op(spans, "invoke_agent")
    assert {s.context.trace_id for s in spans} == {agent.context.trace_id}
    chats, tools = _op(spans, "chat"), _op(spans, "execute_tool")
    assert len(chats) == sum(isinstance(e, ModelCallStarted) for e in events)
    assert len(tools) == sum(isinstance(e, ToolDispatched) for e in events)
    assert len(spans) == 1 + len(chats) + len(tools)
    for name, total in (
        ("gen_ai.usage.input_tokens", end.usage.input_tokens),
        ("gen_ai.usage.output_tokens", end.usage.output_tokens),
    ):
        assert sum(int((s.attributes or {}).get(name, 0)) for s in chats) == total  # type: ignore[call-overload]
    a = agent.attributes or {}
    assert a["toolloop.usage.input_tokens"] == end.usage.input_tokens
    assert a["toolloop.outcome"] == end.outcome
    if end.usage.cost_usd is not None:
        cost = sum(float((s.attributes or {}).get("toolloop.cost_usd", 0.0)) for s in chats)  # type: ignore[arg-type]
        assert cost == pytest.approx(float(end.usage.cost_usd), rel=1e-9, abs=1e-15)
        assert float(a["toolloop.cost_usd"]) == pytest.approx(float(end.usage.cost_usd))  # type: ignore[arg-type]
    failed = end.outcome in FAILED_OUTCOMES
    assert (agent.status.status_code is StatusCode.ERROR) == failed
    if failed:
        assert a["error.type"] == end.error_type  # type: ignore[union-attr]
    purposes = {(s.attributes or {})["toolloop.call.purpose"] for s in chats}
    assert purposes == {e.purpose for e in events if isinstance(e, ModelCallStarted)}

    # the same events exported afterwards give the same spans (a run refused before it
    # started has no start time of its own: only its clock-free shape can match)
    exporter.clear()
    export_events(events, provider)
    timed = any(isinstance(e, LoopStarted) for e in events)
    assert shape(exporter.get_finished_spans(), times=timed) == shape(spans, times=timed)


async def test_a_cancelled_run_ends_every_span_it_opened(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    started = asyncio.Event()

    @tool
    async def wait_for_ever(text: str) -> str:
        """Wait until cancelled."""
        started.set()
        await asyncio.sleep(3600)
        return text

    model = ScriptedChatModel(
        [calls(tool_call("wait_for_ever", {"text": "x"}, "c1")), final("never")],
        model_name=MODEL,
    )
    observer = OTelObserver(provider, use_current_context=False)
    events: list[Event] = []
    agent = LLMAgent(model, [wait_for_ever], observers=[observer, events.append])
    task = asyncio.ensure_future(agent.arun("Go."))
    await asyncio.wait_for(started.wait(), timeout=30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    spans = exporter.get_finished_spans()
    (agent_span,) = _op(spans, "invoke_agent")
    (tool_span,) = _op(spans, "execute_tool")
    assert observer.open_runs == ()
    assert observer.spans_started == len(spans) == 3
    assert (agent_span.attributes or {})["toolloop.outcome"] == "cancelled"
    assert agent_span.status.status_code is StatusCode.ERROR
    assert tool_span.status.status_code is StatusCode.ERROR
    assert tool_span.end_time is not None
    assert agent_span.end_time is not None
    assert tool_span.end_time <= agent_span.end_time


def _role(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, SystemMessage):
        return "system"
    return "tool"


async def test_captured_input_is_the_conversation_the_model_was_sent(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    (multi,) = [s for s in catalog() if s.name == "multi_round"]
    events = await _run(multi, OTelObserver(provider, capture_content=True))
    chats = _op(exporter.get_finished_spans(), "chat")
    conversation = transcript(events)

    last_input = json.loads(str((chats[-1].attributes or {})["gen_ai.input.messages"]))
    assert [m["role"] for m in last_input] == [_role(m) for m in conversation[:-1]]
    last_output = json.loads(str((chats[-1].attributes or {})["gen_ai.output.messages"]))
    assert last_output[0]["parts"] == [{"type": "text", "content": conversation[-1].text}]
    for span in chats:
        assert Decimal(str((span.attributes or {})["toolloop.cost_usd"])) > 0


async def test_a_streamed_run_marks_its_calls_and_their_first_chunk(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    model = ScriptedChatModel(
        [calls(tool_call("echo", {"text": "a"}, "c1"), text="checking"), final("done")],
        model_name=MODEL,
    )
    events: list[Event] = []
    observer = OTelObserver(provider, use_current_context=False)
    agent = LLMAgent(
        model, [echo_tool()], AgentConfig(streaming=True), observers=[observer, events.append]
    )
    await agent.arun("Go.")
    chats = _op(exporter.get_finished_spans(), "chat")
    replies = [e for e in events if isinstance(e, ModelCalled)]

    assert len(chats) == len(replies) == 2
    for span, reply in zip(chats, replies, strict=True):
        a = span.attributes or {}
        assert a["gen_ai.request.stream"] is True
        assert reply.first_token_s is not None
        assert a["gen_ai.response.time_to_first_chunk"] == reply.first_token_s


async def test_a_call_that_raised_ends_its_span_as_an_error_when_it_raised(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    observer = OTelObserver(provider)
    model = ScriptedChatModel([ConnectionError("the provider went away")], model_name=MODEL)
    with pytest.raises(ToolLoopLabError):
        await LLMAgent(model, [], observers=[observer]).arun("go")
    (chat,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert chat.status.status_code == StatusCode.ERROR
    assert chat.attributes is not None
    assert chat.attributes["error.type"] == "ConnectionError"


async def test_a_named_run_exports_its_name_tags_and_metadata(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    observer = OTelObserver(provider, use_current_context=False)
    model = ScriptedChatModel([final("hi"), final("hi")], model_name=MODEL)
    agent = LLMAgent(model, observers=[observer])
    metadata = {"ticket": 42, "owner": "ana", "ok": True, "ratio": 0.5, "more": {"a": [1]}}
    metadata["thread_id"] = "thread-7"  # LangGraph's name for the conversation
    await agent.arun("go", name="triage", tags=("nightly", "v2"), metadata=metadata)
    await agent.arun("go")  # unnamed: none of them
    named, plain = _op(exporter.get_finished_spans(), "invoke_agent")
    attributes = dict(named.attributes or {})
    assert named.name == "invoke_agent triage"
    assert attributes["gen_ai.agent.name"] == "triage"
    assert attributes["toolloop.tags"] == ("nightly", "v2")
    assert attributes["toolloop.metadata.ticket"] == 42
    assert attributes["toolloop.metadata.owner"] == "ana"
    assert attributes["toolloop.metadata.ok"] is True
    assert attributes["toolloop.metadata.ratio"] == 0.5
    assert json.loads(str(attributes["toolloop.metadata.more"])) == {"a": [1]}  # as JSON
    assert attributes["gen_ai.conversation.id"] == "thread-7"
    assert not any(
        key.startswith(("toolloop.tags", "toolloop.metadata", "gen_ai.agent", "gen_ai.conv"))
        for key in plain.attributes or {}
    )
