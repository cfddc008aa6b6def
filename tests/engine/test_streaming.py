"""Streaming (issue 14): the loop reads replies as streams when asked, emits coalesced
``model_delta`` events while they arrive, and ends with the same message, usage and tool
calls an invoke gives; a stream that fails keeps its partial text, and a stopped one
leaves a valid transcript. Real ``ChatOpenAI`` and ``ChatAnthropic`` clients stream from
the loopback stubs, slowly, so fragments are seen before the call ends."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hostile.hostilekit import check_events, check_messages, check_partial, check_result, only
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, calls, final, tool_call
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from stubs.anthropic_stub import AnthropicStub, AnthropicToolUse, AnthropicUsage
from stubs.clients import chat_anthropic, chat_openai
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage
from stubs.prices import anthropic_cost, openai_cost
from stubs.sse import StreamFault, StreamPlan, pieces

from toolloop_lab import AgentConfig, LLMAgent, RunView, ScriptedChatModel, TraceWriter, read_trace
from toolloop_lab._engine.model_call import DELTA_INTERVAL_S, DeltaBuffer
from toolloop_lab._trace import encode_event
from toolloop_lab.errors import ToolLoopError
from toolloop_lab.events import (
    Event,
    LoopFailed,
    ModelCalled,
    ModelCallFailed,
    ModelCallStarted,
    ModelDelta,
    ToolCallDelta,
    parse_event,
    transcript,
)
from toolloop_lab.otel import OTelObserver

SAFETY_S = 30.0
"""Only a deadlock guard: turns a hang into a failure, never a timing assertion."""

STREAM = AgentConfig(streaming=True, tool_timeout_s=SAFETY_S)

pytest_plugins = ("otelkit",)  # the exporter and provider fixtures


@tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


def _deltas(events: list[Event] | tuple[Event, ...], call: int) -> list[ModelDelta]:
    return [e for e in events if isinstance(e, ModelDelta) and e.call == call]


# -- the coalescing buffer, on a clock the test controls ---------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_thousand_fragments_a_second_make_about_twenty_deltas() -> None:
    clock = _Clock()
    sent: list[tuple[str, tuple[Any, ...]]] = []
    buffer = DeltaBuffer(lambda text, parts: sent.append((text, parts)), clock=clock)
    for i in range(1_000):  # one fragment per millisecond, for one second
        clock.now = i / 1_000
        buffer.feed(AIMessageChunk(content=f"{i % 10}"))
    buffer.flush()
    assert len(sent) <= 1 / DELTA_INTERVAL_S + 2  # about 20 a second, whatever the rate
    assert len(sent) >= 1 / DELTA_INTERVAL_S - 1  # and still steadily, not once at the end
    assert "".join(text for text, _ in sent) == "".join(f"{i % 10}" for i in range(1_000))
    assert sent[0][0] == "0"  # the first fragment goes out at once (time to first token)


def test_tool_argument_fragments_are_passed_on_by_call_index() -> None:
    clock = _Clock()
    sent: list[Any] = []
    buffer = DeltaBuffer(lambda text, parts: sent.extend(parts), clock=clock)
    pieces = [
        {"index": 0, "id": "c1", "name": "add", "args": '{"a": '},
        {"index": 1, "id": "c2", "name": "add", "args": '{"a": 5'},
        {"index": 0, "args": '2, "b": 3}'},
        {"index": 1, "args": ', "b": 1}'},
    ]
    for n, piece in enumerate(pieces):
        clock.now = n * 0.001
        buffer.feed(
            AIMessageChunk(content="", tool_call_chunks=[{"type": "tool_call_chunk", **piece}])
        )
    buffer.flush()
    joined: dict[int, str] = {}
    for part in sent:
        joined[part.index] = joined.get(part.index, "") + part.args
    assert {i: json.loads(text) for i, text in joined.items()} == {
        0: {"a": 2, "b": 3},
        1: {"a": 5, "b": 1},
    }
    assert {(p.index, p.id, p.name) for p in sent if p.id} == {(0, "c1", "add"), (1, "c2", "add")}


# -- the scripted model, streamed and invoked --------------------------------------------


def _script() -> list[Any]:
    return [
        calls(tool_call("add", {"a": 2, "b": 40}, "c1"), text="Adding those up for you now."),
        final("The sum is 42, as the tool said, and that is the final answer here."),
    ]


async def test_a_streamed_run_equals_an_invoked_one() -> None:
    invoked = await LLMAgent(ScriptedChatModel(_script(), model_name=MODEL), [add]).arun("sum")
    events: list[Event] = []
    agent = LLMAgent(
        ScriptedChatModel(_script(), model_name=MODEL), [add], STREAM, observers=[events.append]
    )
    streamed = await agent.arun("sum")

    check_result(streamed)
    assert streamed.usage == invoked.usage
    assert streamed.final_response.text == invoked.final_response.text
    assert [m.type for m in streamed.messages] == [m.type for m in invoked.messages]
    assert streamed.messages[1].tool_calls == invoked.messages[1].tool_calls  # type: ignore[attr-defined]
    starts = [e for e in events if isinstance(e, ModelCallStarted)]
    assert [s.streaming for s in starts] == [True, True]
    for called in (e for e in events if isinstance(e, ModelCalled)):
        deltas = _deltas(events, called.call)
        assert deltas, "a streamed call shows its text as it arrives"
        assert "".join(d.text for d in deltas) == called.text
        assert events.index(deltas[-1]) < events.index(called)  # before the call ends
        assert called.first_token_s is not None
        assert 0 <= called.first_token_s <= called.latency_s


async def test_streaming_is_off_by_default() -> None:
    result = await LLMAgent(ScriptedChatModel(_script(), model_name=MODEL), [add]).arun("sum")
    assert not any(isinstance(e, ModelDelta) for e in result.events)
    assert all(not e.streaming for e in result.events if isinstance(e, ModelCallStarted))


class _Drip(ScriptedChatModel):
    """Streams its reply a character at a time, then (optionally) fails."""

    fail_after: int | None = None

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        text = "Streaming one character at a time."
        for i, ch in enumerate(text):
            if self.fail_after is not None and i == self.fail_after:
                raise ConnectionError("the provider dropped the stream")
            await asyncio.sleep(0)
            yield ChatGenerationChunk(message=AIMessageChunk(content=ch))

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        raise NotImplementedError


async def test_a_stream_that_fails_midway_keeps_its_partial_text() -> None:
    events: list[Event] = []
    agent = LLMAgent(
        _Drip([], fail_after=12, model_name=MODEL), [], STREAM, observers=[events.append]
    )
    with pytest.raises(ToolLoopError) as info:
        await agent.arun("go")
    failed = check_partial(info.value)
    assert isinstance(info.value.cause, ConnectionError)
    assert info.value.partial_text == "Streaming on"
    assert failed.partial_text == "Streaming on"
    assert "".join(d.text for d in _deltas(events, 1)) == "Streaming on"


async def test_cancelling_during_a_stream_leaves_a_valid_transcript(echo_tool: BaseTool) -> None:
    events: list[Event] = []
    first = calls(tool_call("echo", {"text": "a"}, "e1"), text="one")
    agent = LLMAgent(
        _Hold([first], model_name=MODEL), [echo_tool], STREAM, observers=[events.append]
    )
    task = asyncio.create_task(agent.arun("go"))
    while not _deltas(events, 2):  # round 2's stream has begun
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, SAFETY_S)
    failed = check_events(events)
    assert isinstance(failed, LoopFailed)
    assert failed.cancelled
    assert failed.partial_text == "partial"
    check_messages(transcript(events), events)  # every call answered, nothing half-sent


class _Hold(ScriptedChatModel):
    """Plays its script, then streams a few characters and waits forever."""

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        if self.remaining:
            async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
                yield chunk
            return
        yield ChatGenerationChunk(message=AIMessageChunk(content="partial"))
        await asyncio.Event().wait()


# -- real clients over slow server-sent events ---------------------------------------------


async def test_chat_openai_streams_deltas_before_the_call_ends(oai: OpenAIStub) -> None:
    args = {"a": 2, "b": 40}
    ids = oai.reply(
        text="Adding them up now, one moment.",
        tool_calls=[OpenAIToolCall("add", args, fragments=('{"a"', ": 2, ", '"b": 4', "0}"))],
        usage=OpenAIUsage(321, 17, cached_tokens=128),
        stream=StreamPlan(interval=0.0, hold_after=4),
    )
    oai.reply(text="42.", usage=OpenAIUsage(400, 3), stream=StreamPlan(interval=0.0))
    events: list[Event] = []
    agent = LLMAgent(chat_openai(oai), [add], STREAM, observers=[events.append])
    task = asyncio.create_task(agent.arun("Add 2 and 40."))
    assert await asyncio.to_thread(oai.wait_held, SAFETY_S)
    while not _deltas(events, 1):
        await asyncio.sleep(0.005)
    assert not task.done()
    assert not any(isinstance(e, ModelCalled) for e in events)  # the call is still running
    oai.release()
    result = await asyncio.wait_for(task, SAFETY_S)

    check_result(result)
    assert result.messages[1].tool_calls == [  # type: ignore[attr-defined]
        {"name": "add", "args": args, "id": ids[0], "type": "tool_call"}
    ]
    first = next(e for e in result.events if isinstance(e, ModelCalled))
    assert (first.usage.input_tokens, first.usage.output_tokens) == (321, 17)
    assert first.usage.cache_read_tokens == 128
    assert first.usage.estimated is False  # exact, from the provider's final chunk
    streamed_args = "".join(p.args for d in _deltas(result.events, 1) for p in d.tool_calls)
    assert json.loads(streamed_args) == args
    assert oai.bodies[0]["stream"] is True
    assert oai.bodies[0]["stream_options"] == {"include_usage": True}


async def test_chat_anthropic_streams_tool_arguments_and_usage_exactly(
    ant: AnthropicStub,
) -> None:
    args = {"a": 7, "b": 35}
    ids = ant.reply(
        text="Let me add.",
        tool_uses=[AnthropicToolUse("add", args, fragments=('{"a": ', '7, "b"', ": 35}"))],
        usage=AnthropicUsage(300, 60, cache_read_input_tokens=100),
        stream=StreamPlan(interval=0.0),
    )
    ant.reply(text="42.", usage=AnthropicUsage(420, 4), stream=StreamPlan(interval=0.0))
    result = await LLMAgent(chat_anthropic(ant), [add], STREAM).arun("Add 7 and 35.")

    check_result(result)
    assert [(c["id"], c["args"]) for c in result.messages[1].tool_calls] == [(ids[0], args)]  # type: ignore[attr-defined]
    first = next(e for e in result.events if isinstance(e, ModelCalled))
    # langchain-core counts cached input inside the input tokens: 300 + 100 read
    assert (first.usage.input_tokens, first.usage.output_tokens) == (400, 60)
    assert first.usage.cache_read_tokens == 100
    assert first.usage.estimated is False
    assert result.final_response.text == "42."


async def test_a_real_stream_dropped_midway_keeps_the_text_so_far(oai: OpenAIStub) -> None:
    oai.reply(
        text="This answer will not arrive in full.",
        usage=OpenAIUsage(50, 9),
        stream=StreamPlan(interval=0.0, fault=StreamFault(after=4, how="drop")),
    )
    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(chat_openai(oai), [add], STREAM).arun("go")
    failed = check_partial(info.value)
    assert info.value.partial_text
    assert "This answer will not arrive in full.".startswith(info.value.partial_text)
    assert failed.partial_text == info.value.partial_text
    check_messages(info.value.messages, info.value.events)


# -- a stream that fails after the provider reported its usage (issue 24, item 10) ---------

USAGE_THEN_DROP = "Every word of this arrived, and so did the usage."


def _usage_then_drop(
    vendor: str, oai: OpenAIStub, ant: AnthropicStub
) -> tuple[Any, int, int, Decimal]:
    """A reply streamed whole, usage included, whose connection then drops before the end
    of the stream; the client, the input and output tokens the provider reported, and what
    genai-prices says they cost."""
    if vendor == "openai":
        oai.chunk_interval = 0
        # role chunk, text pieces, finish chunk, usage chunk: dropped before [DONE]
        sent = 1 + len(pieces(USAGE_THEN_DROP, oai.fragment_chars)) + 2
        plan = StreamPlan(fault=StreamFault(after=sent, how="drop"))
        reported = OpenAIUsage(321, 17, cached_tokens=64)
        oai.reply(text=USAGE_THEN_DROP, usage=reported, stream=plan)
        return chat_openai(oai), 321, 17, openai_cost([reported])
    ant.chunk_interval = 0
    # every event (message_delta carries the usage), then the body is cut
    plan = StreamPlan(fault=StreamFault(after=10_000, how="drop"))
    billed = AnthropicUsage(300, 17)
    ant.reply(text=USAGE_THEN_DROP, usage=billed, stream=plan)
    return chat_anthropic(ant), 300, 17, anthropic_cost([billed])


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_a_stream_failing_after_its_usage_keeps_the_reported_tokens(
    vendor: str,
    oai: OpenAIStub,
    ant: AnthropicStub,
    exporter: InMemorySpanExporter,
    provider: TracerProvider,
) -> None:
    model, prompt_tokens, completion_tokens, cost = _usage_then_drop(vendor, oai, ant)
    events: list[Event] = []
    observers = [events.append, OTelObserver(provider, use_current_context=False)]
    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(model, [add], STREAM, observers=observers).arun("go")

    err = info.value
    assert (err.accumulated_prompt, err.accumulated_completion) == (
        prompt_tokens,
        completion_tokens,
    )
    assert err.cost_usd == cost  # priced as the provider billed it
    assert err.partial_text == USAGE_THEN_DROP
    failed = only(e for e in events if isinstance(e, ModelCallFailed))
    assert failed.partial_text == USAGE_THEN_DROP
    assert failed.usage is not None
    assert (failed.usage.input_tokens, failed.usage.output_tokens) == (
        prompt_tokens,
        completion_tokens,
    )
    assert failed.usage.estimated is False  # the provider's own figures
    assert failed.usage.cost_usd == err.cost_usd
    assert failed.accumulated == failed.usage
    loop_failed = check_partial(err)  # the run's totals are the sum of its calls, this one too
    assert loop_failed.usage == failed.usage
    check_messages(err.messages, err.events)
    # every view shows what the failed call cost: the run view's round, and its span
    assert RunView.from_events(events[: events.index(failed) + 1]).rounds[0].usage == failed.usage
    (chat,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert chat.attributes is not None
    assert chat.attributes["error.type"] == failed.error_type
    assert chat.attributes["gen_ai.usage.input_tokens"] == prompt_tokens
    assert chat.attributes["gen_ai.usage.output_tokens"] == completion_tokens


# -- argument text too deeply nested to parse (issue 24, item 11) -------------------------

DEEP = 20_000
DEEP_ARGS = '{"payload": ' + "[" * DEEP + "]" * DEEP + "}"
"""Tool-argument text nested far deeper than any JSON parser's recursion allows."""


@tool
def store(payload: Any) -> str:
    """Store a payload."""
    return "stored"


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "invoked"])
async def test_arguments_nested_too_deep_to_parse_are_an_invalid_call(
    oai: OpenAIStub, streaming: bool
) -> None:
    oai.chunk_interval = 0
    oai.fragment_chars = 4_096  # a few large fragments: the depth is the point, not the count
    [call_id] = oai.reply(
        tool_calls=[OpenAIToolCall("store", DEEP_ARGS)], usage=OpenAIUsage(321, 9_000)
    )
    oai.reply(text="I will send smaller arguments.", usage=OpenAIUsage(400, 8))
    config = AgentConfig(streaming=streaming, tool_timeout_s=SAFETY_S)
    result = await LLMAgent(chat_openai(oai), [store], config).arun("store it")

    check_result(result)
    first = next(e for e in result.events if isinstance(e, ModelCalled))
    assert (first.usage.input_tokens, first.usage.output_tokens) == (321, 9_000)  # kept, paid
    view = only(first.tool_calls)
    assert (view.id, view.name, view.valid, view.args["raw"]) == (
        call_id,
        "store",
        False,
        DEEP_ARGS,
    )
    answer = only(m for m in result.messages if isinstance(m, ToolMessage))
    assert (answer.tool_call_id, answer.status) == (call_id, "error")
    assert str(answer.content).startswith("Error: could not parse the call to 'store': ")
    assert result.final_response.text == "I will send smaller arguments."
    assert oai.bodies[1]["messages"][-1]["tool_call_id"] == call_id  # the model was told


# -- odd tool-call indexes (issue 24, item 12) ----------------------------------------------


def test_fragments_go_to_each_call_in_reply_order_whatever_index_the_provider_sent() -> None:
    clock = _Clock()
    sent: list[ToolCallDelta] = []
    buffer = DeltaBuffer(lambda text, parts: sent.extend(parts), clock=clock)
    huge = 2**64
    pieces_sent = [
        {"index": -1, "id": "c1", "name": "add", "args": '{"a": '},
        {"index": huge, "id": "c2", "name": "add", "args": '{"a": 5'},
        {"index": -1, "args": '2, "b": 3}'},
        {"index": huge, "args": ', "b": 1}'},
        {"index": None, "id": "c3", "name": "add", "args": '{"a": 0, "b": 0}'},
        {"index": None, "id": "c4", "name": "add", "args": '{"a": 1, "b": 1}'},
    ]
    chunks = [
        AIMessageChunk(content="", tool_call_chunks=[{"type": "tool_call_chunk", **piece}])
        for piece in pieces_sent
    ]
    for n, chunk in enumerate(chunks):
        clock.now = n * 0.001  # some fragments go out together, some alone
        buffer.feed(chunk)
    buffer.flush()

    for part in sent:  # each one a valid event field, as the trace reader checks it
        delta = ModelDelta(run_id="r", round=1, t=0.0, call=1, tool_calls=(part,))
        assert parse_event(encode_event(delta)) == delta
    joined: dict[int, list[Any]] = {}
    for part in sent:
        slot = joined.setdefault(part.index, [None, None, ""])
        slot[0], slot[1], slot[2] = slot[0] or part.id, slot[1] or part.name, slot[2] + part.args
    # the calls as langchain-core adds the same chunks up, in the same order
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    assert [tuple(slot) for _, slot in sorted(joined.items())] == [
        (c["id"], c["name"], c["args"]) for c in merged.tool_call_chunks
    ]
    assert sorted(joined) == [0, 1, 2, 3]


async def test_a_stream_with_odd_call_indexes_is_written_and_read_back_whole(
    oai: OpenAIStub, tmp_path: Path
) -> None:
    oai.chunk_interval = 0
    ids = oai.reply(
        text="Adding both.",
        tool_calls=[
            OpenAIToolCall("add", {"a": 1, "b": 2}, index=-1),
            OpenAIToolCall("add", {"a": 3, "b": 4}, index=2**64),
        ],
        usage=OpenAIUsage(50, 30),
    )
    oai.reply(text="3 and 7.", usage=OpenAIUsage(80, 4))
    path = tmp_path / "run.jsonl"
    with TraceWriter(path) as trace:
        result = await LLMAgent(chat_openai(oai), [add], STREAM, observers=[trace]).arun("add")

    check_result(result)
    read = read_trace(path)
    assert read.skipped == ()
    assert read.events == result.events
    streamed: dict[int, tuple[str | None, str]] = {}
    for part in (p for d in _deltas(read.events, 1) for p in d.tool_calls):
        known, args = streamed.get(part.index, (None, ""))
        streamed[part.index] = (known or part.id, args + part.args)
    assert {i: (cid, json.loads(args)) for i, (cid, args) in streamed.items()} == {
        0: (ids[0], {"a": 1, "b": 2}),
        1: (ids[1], {"a": 3, "b": 4}),
    }
    assert [m.content for m in result.messages if isinstance(m, ToolMessage)] == ["3", "7"]
