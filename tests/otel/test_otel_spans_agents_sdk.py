"""The OpenAI Agents SDK, traced by its OpenInference instrumentation, against the loopback
OpenAI stub, read through :class:`SpanSource`: OpenInference's names (``AGENT`` / ``LLM`` /
``TOOL`` spans, ``llm.token_count.*``, flattened messages, tool spans without a call id),
the SDK's workflow span around its agent, a tool that raises, an agent used as a tool
nesting under the call that ran it, and events arriving while the run is in flight."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage

agents = pytest.importorskip("agents")
oi_agents = pytest.importorskip("openinference.instrumentation.openai_agents")
openai = pytest.importorskip("openai")

from toolloop_lab._runview import nested_run_ids  # noqa: E402 - after the optional imports are known
from toolloop_lab.events import (  # noqa: E402
    Event,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    ToolDispatched,
    transcript,
)
from toolloop_lab.otel import SpanSource  # noqa: E402

MODEL = "gpt-4o-mini"


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    provider = TracerProvider()
    agents.set_trace_processors([])  # no upload to OpenAI's dashboard: offline
    instrumentor = oi_agents.OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def _model(oai: OpenAIStub) -> object:
    client = openai.AsyncOpenAI(base_url=oai.base_url, api_key="test")
    return agents.OpenAIChatCompletionsModel(model=MODEL, openai_client=client)


async def test_an_agents_sdk_run_reads_as_our_events(
    provider: TracerProvider, oai: OpenAIStub
) -> None:
    oai.chunk_interval = 0
    ids = oai.reply(
        tool_calls=[OpenAIToolCall("add", {"a": 2, "b": 3}), OpenAIToolCall("broken", {})],
        usage=OpenAIUsage(40, 9),
    )
    oai.reply(text="2 + 3 = 5", usage=OpenAIUsage(61, 6))
    events: list[Event] = []
    seen_in_tool: list[str] = []
    provider.add_span_processor(SpanSource(events.append))

    @agents.function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        seen_in_tool.extend(e.kind for e in events)
        return a + b

    @agents.function_tool
    def broken() -> str:
        """Always fails."""
        raise ValueError("out of order")

    agent = agents.Agent(name="adder", instructions="Add.", tools=[add, broken], model=_model(oai))
    result = await agents.Runner.run(agent, "2 + 3?")

    assert result.final_output == "2 + 3 = 5"
    assert seen_in_tool[:4] == ["loop_start", "round_start", "model_call_start", "model_call"]
    start, end = events[0], events[-1]
    assert isinstance(start, LoopStarted)
    assert start.source == "otel"
    assert isinstance(end, LoopFinished)
    assert {e.run_id for e in events} == {start.run_id}  # the workflow and its agent: one run
    called = [e for e in events if isinstance(e, ModelCalled)]
    assert [(c.usage.input_tokens, c.usage.output_tokens) for c in called] == [
        (u.prompt_tokens, u.completion_tokens) for u in oai.reported
    ]
    assert not any(c.usage.estimated for c in called)
    assert all(c.usage.cost_usd is not None for c in called)
    dispatched = {e.name: e for e in events if isinstance(e, ToolDispatched)}
    assert (dispatched["add"].tool_call_id, dispatched["add"].status) == (ids[0], "success")
    assert dispatched["add"].content == "5"
    broken_call = dispatched["broken"]
    assert broken_call.status == "error"  # the SDK answered the model with its error text
    assert "error occurred" in broken_call.content
    assert (broken_call.tool_call_id, broken_call.round) == (ids[1], 1)
    assert (end.rounds, end.final_text) == (2, "2 + 3 = 5")
    said = [m.type for m in transcript(events)]
    assert said[:3] == ["system", "human", "ai"]
    assert said[-1] == "ai"


async def test_an_agent_used_as_a_tool_nests_under_its_call(
    provider: TracerProvider, oai: OpenAIStub
) -> None:
    oai.chunk_interval = 0
    (call_id,) = oai.reply(
        tool_calls=[OpenAIToolCall("oracle", {"input": "meaning?"})], usage=OpenAIUsage(30, 8)
    )
    oai.reply(text="42", usage=OpenAIUsage(12, 1))
    oai.reply(text="It is 42.", usage=OpenAIUsage(45, 4))
    events: list[Event] = []
    provider.add_span_processor(SpanSource(events.append))
    oracle = agents.Agent(name="oracle", instructions="Answer.", model=_model(oai))
    asker = agents.Agent(
        name="asker",
        instructions="Ask the oracle.",
        tools=[oracle.as_tool(tool_name="oracle", tool_description="Ask the oracle.")],
        model=_model(oai),
    )
    await agents.Runner.run(asker, "What is the meaning?")

    starts = [e for e in events if isinstance(e, LoopStarted)]
    assert len(starts) == 2
    parent, child = starts
    assert (child.parent_run_id, child.parent_tool_call_id) == (parent.run_id, call_id)
    assert nested_run_ids(events, parent.run_id) == (child.run_id,)
    ends = {e.run_id: e for e in events if isinstance(e, LoopFinished)}
    assert (ends[child.run_id].final_text, ends[parent.run_id].final_text) == ("42", "It is 42.")
    assert ends[child.run_id].usage.input_tokens == 12
    assert ends[parent.run_id].usage.input_tokens == 75  # a sub-agent counts its own spend
