"""The OpenAI client instrumented by ``opentelemetry-instrumentation-openai-v2``, against the
loopback OpenAI stub, read through :class:`SpanSource`: a bare call is a run of its own; a
hand-written loop inside the caller's own ``invoke_agent`` span is one run whose rounds
hold the client's calls and the caller's ``execute_tool`` spans; counts equal what the stub
reported, streamed or not, and the events arrive while the loop is still running."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage

openai = pytest.importorskip("openai")
openai_v2 = pytest.importorskip("opentelemetry.instrumentation.openai_v2")

from toolloop_lab.events import (  # noqa: E402 - after the optional imports are known
    Event,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    ToolDispatched,
    by_run,
)
from toolloop_lab.otel import SpanSource  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "parameters": {"type": "object", "properties": {"a": {}, "b": {}}},
        },
    }
]


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    provider = TracerProvider()
    instrumentor = openai_v2.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def test_bare_calls_are_runs_with_the_usage_openai_reported(
    provider: TracerProvider, oai: OpenAIStub
) -> None:
    oai.chunk_interval = 0
    oai.reply(text="Hello.", usage=OpenAIUsage(12, 3))
    oai.reply(text="Hello again.", usage=OpenAIUsage(15, 4, cached_tokens=8))
    events: list[Event] = []
    provider.add_span_processor(SpanSource(events.append))
    client = openai.OpenAI(base_url=oai.base_url, api_key="test")
    hello = [{"role": "user", "content": "Hi"}]
    client.chat.completions.create(model="gpt-4o-mini", messages=hello)
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=hello,
        stream=True,
        stream_options={"include_usage": True},
    )
    for _chunk in stream:
        pass

    runs = list(by_run(events).values())
    assert len(runs) == 2
    called = [e for e in events if isinstance(e, ModelCalled)]
    assert [(c.usage.input_tokens, c.usage.output_tokens) for c in called] == [
        (u.prompt_tokens, u.completion_tokens) for u in oai.reported
    ]
    assert all(c.model_name == oai.model for c in called)
    assert all(c.usage.cost_usd is not None for c in called)
    assert all(isinstance(run[-1], LoopFinished) for run in runs)


def test_a_hand_written_loop_in_its_own_agent_span_is_one_live_run(
    provider: TracerProvider, oai: OpenAIStub
) -> None:
    oai.chunk_interval = 0
    oai.reply(tool_calls=[OpenAIToolCall("add", {"a": 2, "b": 3})], usage=OpenAIUsage(40, 9))
    oai.reply(text="2 + 3 = 5", usage=OpenAIUsage(55, 6))
    events: list[Event] = []
    provider.add_span_processor(SpanSource(events.append))
    tracer = provider.get_tracer("my_loop")
    client = openai.OpenAI(base_url=oai.base_url, api_key="test")
    seen_mid_run: list[str] = []

    messages: list[dict[str, object]] = [{"role": "user", "content": "2 + 3?"}]
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "adder"}
    with tracer.start_as_current_span("invoke_agent adder", attributes=agent):
        while True:
            reply = client.chat.completions.create(
                model="gpt-4o-mini",
                messages=messages,
                tools=TOOLS,
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                break
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                args = json.loads(call.function.arguments)
                tool = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call.function.name,
                    "gen_ai.tool.call.id": call.id,
                }
                with tracer.start_as_current_span(
                    f"execute_tool {call.function.name}", attributes=tool
                ):
                    result = str(args["a"] + args["b"])
                    seen_mid_run.extend(e.kind for e in events)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    assert seen_mid_run == [
        "loop_start",
        "round_start",
        "model_call_start",
        "model_call",
        "tool_start",
    ]
    start, end = events[0], events[-1]
    assert isinstance(start, LoopStarted)
    assert start.name == "adder"
    assert isinstance(end, LoopFinished)
    assert (end.rounds, end.usage.input_tokens, end.usage.output_tokens) == (2, 95, 15)
    (dispatch,) = [e for e in events if isinstance(e, ToolDispatched)]
    called = [e for e in events if isinstance(e, ModelCalled)]
    assert (dispatch.status, dispatch.round) == ("success", 1)
    assert called[0].finish_reason == "tool_calls"
    assert {e.run_id for e in events} == {start.run_id}
