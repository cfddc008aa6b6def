"""The loopback stubs stream like the real APIs, seen through the real clients.

``ChatOpenAI`` and ``ChatAnthropic`` (and under them the ``openai`` and ``anthropic`` SDKs)
talk to ``tests/stubs`` over HTTP on 127.0.0.1. These tests pin what the loop-level and
bridge tests build on: fragments reach the client while the call is still running, what
langchain-core assembles from the fragments is exactly what was queued (arguments cut
inside escapes and multi-byte characters included), usage is exact, one queued reply
serves a streaming and a non-streaming request alike, and a stream that fails part-way
raises the SDK's error after some chunks arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, cast

import anthropic
import httpx2
import openai
import pytest
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.tools import tool
from loopkit import wait_until
from stubs.anthropic_stub import AnthropicStub, AnthropicToolUse, AnthropicUsage
from stubs.clients import chat_anthropic, chat_openai
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage
from stubs.sse import FaultKind, ScriptError, StreamFault, StreamPlan, pieces, split_at


@tool
def record(payload: dict[str, Any]) -> str:
    """Store a payload."""
    return "ok"


NESTED = {
    "city": "Zürich",
    "tags": ["naïve", "日本語", "emoji 😀", ""],
    "quote": 'she said "hi" \\ then left\n\ttab',
    "nested": {"deep": {"list": [1, 2.5, None, True, False, {"k": "ß"}]}},
    "empty": {},
}
"""Arguments with every escape JSON has, non-BMP characters and nesting."""


async def collect(chunks: AsyncIterator[BaseMessage]) -> tuple[AIMessageChunk, list[float]]:
    """The merged message of a stream and when each chunk arrived."""
    merged: AIMessageChunk | None = None
    arrivals: list[float] = []
    async for chunk in chunks:
        arrivals.append(time.monotonic())
        assert isinstance(chunk, AIMessageChunk)
        merged = chunk if merged is None else merged + chunk
    assert merged is not None
    return merged, arrivals


async def drain(chunks: AsyncIterator[BaseMessage], texts: list[str]) -> None:
    """Read a stream to its end, keeping the text of each chunk (also when it fails)."""
    async for chunk in chunks:
        texts.append(chunk.text)


def escape_cuts(text: str) -> list[int]:
    """Offsets inside every escape of a JSON text: mid ``\\uXXXX`` (so also between the
    two halves of a surrogate pair), and right after the backslash of the short ones."""
    cuts = {m.start() + 4 for m in re.finditer(r"\\u[0-9a-fA-F]{4}", text)}
    cuts |= {m.start() + 1 for m in re.finditer(r'\\["\\/bfnrt]', text)}
    cuts |= {m.end() for m in re.finditer(r"\\u[dD][89abAB][0-9a-fA-F]{2}", text)}
    return sorted(c for c in cuts if 0 < c < len(text))


# -- chunks arrive while the call runs ------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_fragments_arrive_before_the_stream_ends(
    provider: str, oai: OpenAIStub, ant: AnthropicStub
) -> None:
    stub: OpenAIStub | AnthropicStub
    text = "The quick brown fox jumps over the lazy dog."
    # events before the first text fragment: OpenAI a role chunk; Anthropic message_start,
    # ping and content_block_start
    lead = 1 if provider == "openai" else 3
    plan = StreamPlan(hold_after=lead + 3)
    if provider == "openai":
        stub = oai
        oai.fragment_chars = 5
        oai.reply(text=text, usage=OpenAIUsage(10, 12), stream=plan)
        model: Any = chat_openai(oai)
    else:
        stub = ant
        ant.fragment_chars = 5
        ant.reply(text=text, usage=AnthropicUsage(10, 12), stream=plan)
        model = chat_anthropic(ant)
    received: list[tuple[float, str]] = []

    async def consume() -> None:
        async for chunk in model.astream("go"):
            received.append((time.monotonic(), chunk.text))

    task = asyncio.create_task(consume())
    assert await asyncio.to_thread(stub.wait_held, 5.0)
    seen = await asyncio.to_thread(wait_until, lambda: "".join(t for _, t in received) == text[:15])
    assert seen, "".join(t for _, t in received)
    # the stream is still open: the call has not ended, yet 3 fragments are in
    assert not task.done()
    assert stub.held == 1
    ended = len(stub.streams)
    assert ended == 0
    released = time.monotonic()
    stub.release()
    await task

    assert "".join(t for _, t in received) == text
    before = [t for at, t in received if at < released]
    assert "".join(before) == text[:15]
    [stream] = stub.wait_streams(1)
    assert stream.outcome == "complete"
    assert stream.sent == stream.planned


async def test_chunk_arrivals_spread_over_the_stream(oai: OpenAIStub) -> None:
    oai.fragment_chars = 4
    text = "Streaming, one small piece at a time."
    oai.reply(text=text, usage=OpenAIUsage(20, 9), stream=StreamPlan(interval=0.1))

    merged, arrivals = await collect(chat_openai(oai).astream("go"))

    assert merged.text == text
    [stream] = oai.wait_streams(1)
    assert stream.sent == stream.planned == 1 + len(pieces(text, 4)) + 2  # role, finish, DONE
    # the first chunk was in before the server even sent its last event, and the
    # arrivals cover at least half the time the server took to send them
    assert arrivals[0] < stream.sent_at[-1]
    assert arrivals[-1] - arrivals[0] >= (stream.sent_at[-1] - stream.sent_at[0]) / 2


async def test_streaming_client_gets_tokens_while_ainvoke_runs(oai: OpenAIStub) -> None:
    class Tokens(AsyncCallbackHandler):
        def __init__(self) -> None:
            self.at: list[tuple[float, str]] = []

        async def on_llm_new_token(self, token: Any, **kwargs: Any) -> None:
            self.at.append((time.monotonic(), token))

    text = "Answer built from many fragments."
    oai.reply(text=text, usage=OpenAIUsage(30, 8), stream=StreamPlan(interval=0.08))
    tokens = Tokens()

    reply = await chat_openai(oai, streaming=True).ainvoke("go", config={"callbacks": [tokens]})
    done = time.monotonic()

    assert reply.text == text
    assert "".join(t for _, t in tokens.at) == text
    assert oai.requests[0].wants_stream
    [stream] = oai.wait_streams(1)
    assert tokens.at[1][0] < stream.sent_at[-1] < done


def test_pacing_comes_from_the_reply_else_the_stub() -> None:
    with OpenAIStub(chunk_interval=0.12, fragment_chars=50) as oai:
        oai.reply(text="a", usage=OpenAIUsage(1, 1))
        oai.reply(text="b", usage=OpenAIUsage(1, 1), stream=StreamPlan(interval=0.25))
        model = chat_openai(oai, streaming=True)
        assert [model.invoke("x").text for _ in range(2)] == ["a", "b"]
    stub_paced, reply_paced = oai.wait_streams(2)
    for record, interval in ((stub_paced, 0.12), (reply_paced, 0.25)):
        gaps = [b - a for a, b in zip(record.sent_at, record.sent_at[1:], strict=False)]
        assert len(gaps) == 3
        assert min(gaps) >= interval * 0.95
    oai.assert_clean()


# -- what langchain-core assembles equals what was queued -----------------------------


def expected_call(name: str, args: Any, call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def assert_anthropic_usage(message: AIMessageChunk, usage: AnthropicUsage) -> None:
    """langchain-anthropic's figures for what the stub reported: all input counted."""
    figures = message.usage_metadata
    assert figures is not None
    assert figures["input_tokens"] == usage.total_input
    assert figures["output_tokens"] == usage.output_tokens
    assert figures["total_tokens"] == usage.total_input + usage.output_tokens
    details = figures.get("input_token_details", {})
    assert (details.get("cache_read"), details.get("cache_creation")) == (
        usage.cache_read_input_tokens,
        usage.cache_creation_input_tokens,
    )


ESCAPED = json.dumps(NESTED)
RAW = json.dumps(NESTED, ensure_ascii=False)
OPENAI_CASES: dict[str, list[OpenAIToolCall]] = {
    # json.dumps escapes all non-ASCII: cut inside every escape sequence
    "cut_inside_escapes": [
        OpenAIToolCall("record", NESTED, fragments=split_at(ESCAPED, *escape_cuts(ESCAPED)))
    ],
    # raw UTF-8 arguments (a str goes on the wire verbatim), every event written in two
    # pieces cut inside a multi-byte character
    "raw_utf8_split_bytes": [OpenAIToolCall("record", RAW)],
    # one character per fragment; a second call cut by the stub's default
    "one_char_fragments": [
        OpenAIToolCall("record", NESTED, fragments=tuple(RAW)),
        OpenAIToolCall("record", {"n": [{"é": "\u2028"}]}),
    ],
}


@pytest.mark.parametrize("case", sorted(OPENAI_CASES))
async def test_openai_fragmented_arguments_assemble_exactly(oai: OpenAIStub, case: str) -> None:
    oai.chunk_interval = 0
    oai.fragment_chars = 3
    calls = OPENAI_CASES[case]
    plan = StreamPlan(split_writes=case == "raw_utf8_split_bytes")
    ids = oai.reply(text="Storing.", tool_calls=calls, usage=OpenAIUsage(50, 40), stream=plan)
    oai.reply(tool_calls=calls, usage=OpenAIUsage(50, 40))  # the same reply, whole

    model = chat_openai(oai).bind_tools([record])
    merged, _ = await collect(model.astream("store"))
    whole = await model.ainvoke("store")

    queued = [
        json.loads(c.arguments) if isinstance(c.arguments, str) else c.arguments for c in calls
    ]
    assert queued[0] == NESTED
    expected = [expected_call("record", a, i) for a, i in zip(queued, ids, strict=True)]
    assert merged.tool_calls == expected
    assert merged.invalid_tool_calls == []
    assert merged.text == "Storing."
    assert merged.response_metadata["finish_reason"] == "tool_calls"
    assert isinstance(whole, AIMessage)
    assert [c["args"] for c in whole.tool_calls] == queued
    # role chunk, text pieces, per call a first fragment and its arguments, finish, [DONE]
    arguments = sum(1 + len(c.wire_fragments(3)) for c in calls)
    [stream] = oai.wait_streams(1)
    assert stream.sent == stream.planned == 1 + len(pieces("Storing.", 3)) + arguments + 2
    assert [r.wants_stream for r in oai.requests] == [True, False]


def test_escape_cuts_really_cut_inside_escapes() -> None:
    text = json.dumps(NESTED)
    cuts = escape_cuts(text)
    assert "".join(split_at(text, *cuts)) == text
    heads = [text[:c] for c in cuts]
    assert any(h.endswith("Z\\u00") for h in heads)  # mid \u00fc
    assert any(h.endswith("emoji \\ud83d") for h in heads)  # between surrogate halves
    assert any(h.endswith("she said \\") for h in heads)  # mid \"


async def test_anthropic_fragmented_input_assembles_exactly(ant: AnthropicStub) -> None:
    ant.chunk_interval = 0
    ant.fragment_chars = 2
    raw = json.dumps(NESTED, ensure_ascii=False)
    escaped = json.dumps(NESTED)
    tool_uses = [
        AnthropicToolUse("record", NESTED, fragments=split_at(escaped, *escape_cuts(escaped))),
        AnthropicToolUse("record", NESTED, fragments=tuple(raw)),
        AnthropicToolUse("record", {"k": ["ß", {"x": None}]}),
    ]
    usage = AnthropicUsage(400, 90, cache_read_input_tokens=1_024, cache_creation_input_tokens=3)
    plan = StreamPlan(split_writes=True)
    ids = ant.reply(text="Storing three.", tool_uses=tool_uses, usage=usage, stream=plan)
    ant.reply(text="Storing three.", tool_uses=tool_uses, usage=usage)

    model = chat_anthropic(ant).bind_tools([record])
    merged, _ = await collect(model.astream("store"))
    whole = await model.ainvoke("store")

    expected = [expected_call("record", u.input, i) for u, i in zip(tool_uses, ids, strict=True)]
    assert merged.tool_calls == expected
    assert merged.invalid_tool_calls == []
    assert merged.text == "Storing three."
    assert merged.response_metadata["stop_reason"] == "tool_use"
    assert isinstance(whole, AIMessage)
    assert [c["args"] for c in whole.tool_calls] == [u.input for u in tool_uses]
    assert merged.usage_metadata == whole.usage_metadata
    assert_anthropic_usage(merged, usage)
    [stream] = ant.wait_streams(1)
    assert stream.outcome == "complete"


# -- usage ----------------------------------------------------------------------------


async def test_openai_stream_usage_equals_the_queued_usage(oai: OpenAIStub) -> None:
    oai.chunk_interval = 0
    usage = OpenAIUsage(2_345, 67, cached_tokens=1_792)
    for _ in range(3):
        oai.reply(text="Cached answer.", usage=usage)

    streamed, _ = await collect(chat_openai(oai, stream_usage=True).astream("q"))
    whole = await chat_openai(oai).ainvoke("q")
    unasked, _ = await collect(chat_openai(oai, stream_usage=False).astream("q"))

    assert streamed.usage_metadata is not None
    assert isinstance(whole, AIMessage)
    assert streamed.usage_metadata == whole.usage_metadata
    figures = streamed.usage_metadata
    assert (figures["input_tokens"], figures["output_tokens"]) == (
        usage.prompt_tokens,
        usage.completion_tokens,
    )
    assert figures["total_tokens"] == usage.prompt_tokens + usage.completion_tokens
    assert figures.get("input_token_details", {}).get("cache_read") == usage.cached_tokens
    # no stream_options.include_usage in the request: no usage chunk, as OpenAI does it
    assert unasked.usage_metadata is None
    asked, _, not_asked = oai.bodies
    assert asked["stream_options"] == {"include_usage": True}
    assert "stream_options" not in not_asked
    with_usage, without = oai.wait_streams(2)
    assert with_usage.planned == without.planned + 1


async def test_anthropic_stream_usage_is_exact_by_default(ant: AnthropicStub) -> None:
    ant.chunk_interval = 0
    usage = AnthropicUsage(310, 44, cache_read_input_tokens=2_048, cache_creation_input_tokens=512)
    ant.reply(text="Done.", usage=usage)

    merged, _ = await collect(chat_anthropic(ant).astream("q"))

    assert_anthropic_usage(merged, usage)
    assert merged.response_metadata["model_name"] == AnthropicStub.model


# -- failures part-way ----------------------------------------------------------------

OPENAI_FAULTS: dict[FaultKind, type[BaseException]] = {
    "drop": openai.APIConnectionError,
    "reset": openai.APIConnectionError,
    "error": openai.APIError,
}


@pytest.mark.parametrize("how", ["drop", "reset", "error"])
async def test_openai_stream_failing_midway_raises_after_some_chunks(
    oai: OpenAIStub, how: FaultKind
) -> None:
    oai.fragment_chars = 3
    text = "abcdefghijklmnopqrstuvwxyz"
    # events: role chunk, 9 text pieces, finish, [DONE]: fail after the role and 4 pieces
    fault = StreamFault(after=5, how=how, message="stream broke")
    oai.reply(text=text, usage=OpenAIUsage(70, 30), stream=StreamPlan(interval=0, fault=fault))
    oai.reply(text="later", usage=OpenAIUsage(5, 1))
    got: list[str] = []

    with pytest.raises(OPENAI_FAULTS[how]) as info:
        await drain(chat_openai(oai).astream("go"), got)

    assert "".join(got) == text[:12]
    if how == "error":
        assert not isinstance(info.value, openai.APIConnectionError)
        assert isinstance(info.value, openai.APIError)
        assert info.value.body == {
            "message": "stream broke",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    [stream] = oai.wait_streams(1)
    assert (stream.outcome, stream.sent, stream.planned) == (how, 5, 12)
    assert oai.reported == [OpenAIUsage(5, 1)]  # the failed reply reported nothing
    # the stub goes on serving after a failed stream
    assert (await chat_openai(oai).ainvoke("again")).text == "later"


ANTHROPIC_FAULTS: dict[FaultKind, type[BaseException]] = {
    "drop": httpx2.RemoteProtocolError,
    "reset": httpx2.ReadError,
    "error": anthropic.APIStatusError,
}


def _cut_by(error: BaseException, kind: type[BaseException]) -> bool:
    """``error`` is the transport's ``kind``, or the SDK's connection error raised from
    one: earlier anthropic SDKs let a body cut mid-stream through as it is, 2.17 wraps it
    in ``APIConnectionError`` (langchain-anthropic's ``AnthropicConnectionError``); either
    way the cut is what the caller learns."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


@pytest.mark.parametrize("how", ["drop", "reset", "error"])
async def test_anthropic_stream_failing_midway_raises_after_some_chunks(
    ant: AnthropicStub, how: FaultKind
) -> None:
    ant.fragment_chars = 3
    text = "abcdefghijklmnopqrstuvwxyz"
    # events: message_start, ping, block start, 9 deltas, ...: fail after 4 deltas
    fault = StreamFault(after=7, how=how)
    ant.reply(text=text, usage=AnthropicUsage(70, 30), stream=StreamPlan(interval=0, fault=fault))
    got: list[str] = []

    kind = ANTHROPIC_FAULTS[how]
    with pytest.raises((kind, anthropic.APIConnectionError)) as info:
        await drain(chat_anthropic(ant).astream("go"), got)

    assert _cut_by(info.value, kind), repr(info.value)
    assert "".join(got) == text[:12]
    if how == "error":
        assert isinstance(info.value, anthropic.APIStatusError)
        assert info.value.body == {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "stub stream fault"},
        }
    [stream] = ant.wait_streams(1)
    assert (stream.outcome, stream.sent) == (how, 7)
    assert ant.reported == []


async def test_fault_past_the_last_event_still_cuts_the_body(ant: AnthropicStub) -> None:
    # every event goes out, then the body is cut before its end: the anthropic SDK reads
    # to the end of the body and sees it (the openai SDK stops reading at [DONE])
    ant.chunk_interval = 0
    plan = StreamPlan(fault=StreamFault(after=10_000, how="drop"))
    ant.reply(text="whole text", usage=AnthropicUsage(3, 3), stream=plan)
    got: list[str] = []

    with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)) as info:
        await drain(chat_anthropic(ant).astream("go"), got)

    assert _cut_by(info.value, httpx2.RemoteProtocolError), repr(info.value)
    assert "".join(got) == "whole text"
    [stream] = ant.wait_streams(1)
    assert (stream.outcome, stream.sent) == ("drop", stream.planned)


# -- the stub's own bookkeeping -------------------------------------------------------


async def test_client_closing_early_is_recorded(oai: OpenAIStub) -> None:
    oai.fragment_chars = 1
    oai.reply(text="x" * 40, usage=OpenAIUsage(1, 40), stream=StreamPlan(interval=0.02))

    chunks = cast(AsyncGenerator[AIMessageChunk, None], chat_openai(oai).astream("go"))
    async with contextlib.aclosing(chunks):
        async for chunk in chunks:
            if chunk.text:
                break

    [stream] = await asyncio.to_thread(oai.wait_streams, 1)
    assert stream.outcome == "client_closed"
    assert 2 <= stream.sent < stream.planned


async def test_stopping_the_stub_ends_a_held_stream(oai: OpenAIStub) -> None:
    oai.chunk_interval = 0
    oai.reply(text="held forever", usage=OpenAIUsage(2, 2), stream=StreamPlan(hold_after=2))

    task = asyncio.create_task(collect(chat_openai(oai).astream("go")))
    assert await asyncio.to_thread(oai.wait_held, 5.0)
    await asyncio.to_thread(oai.stop)

    with pytest.raises(openai.APIConnectionError):
        await task
    [stream] = await asyncio.to_thread(oai.wait_streams, 1)
    assert (stream.outcome, stream.sent) == ("stopped", 2)


async def test_a_release_before_the_hold_is_kept(ant: AnthropicStub) -> None:
    ant.chunk_interval = 0
    ant.reply(text="no wait", usage=AnthropicUsage(2, 2), stream=StreamPlan(hold_after=4))
    ant.release()

    # were the early release lost, the stream would wait for another one forever
    merged, _ = await asyncio.wait_for(collect(chat_anthropic(ant).astream("go")), 10)

    assert merged.text == "no wait"
    assert ant.wait_streams(1)[0].outcome == "complete"


@pytest.mark.parametrize("keep_alive", [True, False])
async def test_streams_and_whole_replies_share_a_keep_alive_connection(keep_alive: bool) -> None:
    stub = OpenAIStub(keep_alive=keep_alive, chunk_interval=0).start()
    try:
        for text in ("one", "two", "three"):
            stub.reply(text=text, usage=OpenAIUsage(1, 1))
        streaming = chat_openai(stub, streaming=True)
        texts = [(await streaming.ainvoke("a")).text, (await streaming.ainvoke("b")).text]
        texts.append((await chat_openai(stub).ainvoke("c")).text)
    finally:
        stub.stop()
    assert texts == ["one", "two", "three"]
    ports = [r.client_port for r in stub.requests]
    assert [r.wants_stream for r in stub.requests] == [True, True, False]
    assert (ports[0] == ports[1]) is keep_alive
    stub.assert_clean()


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: StreamFault(after=-1), "after"),
        (lambda: StreamFault(after=1, how="explode"), "how"),  # type: ignore[arg-type]
        (lambda: StreamPlan(interval=-0.1), "interval"),
        (lambda: StreamPlan(hold_after=-1), "hold_after"),
        (lambda: split_at("abc", 2, 1), "cuts"),
        (lambda: split_at("abc", 3), "cuts"),
        (lambda: OpenAIStub(fragment_chars=0), "fragment_chars"),
        (lambda: AnthropicStub(chunk_interval=-1), "chunk_interval"),
        (
            lambda: OpenAIStub().reply(
                tool_calls=[OpenAIToolCall("f", {"a": 1}, fragments=['{"a": ', "2}"])],
                usage=OpenAIUsage(1, 1),
            ),
            "fragments",
        ),
        (
            lambda: OpenAIStub().reply(
                tool_calls=[OpenAIToolCall("f", '{"a": 1}', fragments=['{"a":', "1}"])],
                usage=OpenAIUsage(1, 1),
            ),
            "fragments",
        ),
        (
            lambda: AnthropicStub().reply(
                tool_uses=[AnthropicToolUse("f", {"a": 1}, fragments=['{"a": 1'])],
                usage=AnthropicUsage(1, 1),
            ),
            "fragments",
        ),
    ],
)
def test_impossible_scripts_are_refused_with_the_field(
    make: Callable[[], object], field: str
) -> None:
    with pytest.raises(ScriptError) as info:
        make()
    assert info.value.field == field


def test_refused_script_queues_nothing() -> None:
    stub = OpenAIStub()
    with pytest.raises(ScriptError):
        stub.reply(
            tool_calls=[OpenAIToolCall("f", {"a": 1}, fragments=["{}"])], usage=OpenAIUsage(1, 1)
        )
    assert stub.remaining == 0
    assert stub.reported == []


# -- the wire itself ------------------------------------------------------------------


def raw_stream(stub: OpenAIStub | AnthropicStub, path: str, body: dict[str, Any]) -> bytes:
    """POST ``body`` on a plain socket and return every byte until the server closes."""
    payload = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", stub.port), timeout=10) as conn:
        conn.sendall(head + payload)
        received = bytearray()
        while data := conn.recv(65536):
            received += data
    return bytes(received)


def dechunk(raw: bytes) -> tuple[bytes, list[bytes], bool]:
    """The headers, the data of each HTTP chunk, and whether the body ended properly."""
    headers, _, rest = raw.partition(b"\r\n\r\n")
    chunks: list[bytes] = []
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return headers, chunks, rest == b"\r\n"
        chunks.append(rest[:size])
        rest = rest[size + 2 :]
    return headers, chunks, False


def test_split_writes_cut_utf8_characters_on_the_wire(ant: AnthropicStub) -> None:
    ant.chunk_interval = 0
    ant.fragment_chars = 3
    ant.reply(text="día 日本", usage=AnthropicUsage(5, 5), stream=StreamPlan(split_writes=True))

    raw = raw_stream(ant, "/v1/messages", {"messages": [], "stream": True})

    headers, chunks, complete = dechunk(raw)
    assert b"Transfer-Encoding: chunked" in headers
    assert b"Content-Type: text/event-stream" in headers
    assert complete
    body = b"".join(chunks).decode()
    events = [e for e in body.split("\n\n") if e]
    assert len(events) == ant.streams[0].planned
    assert len(chunks) == 2 * len(events)  # every event in two writes
    names = [e.split("\n")[0].removeprefix("event: ") for e in events]
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-2:] == ["message_delta", "message_stop"]
    deltas = [json.loads(e.split("\n")[1].removeprefix("data: ")) for e in events]
    text = "".join(d["delta"]["text"] for d in deltas if d["type"] == "content_block_delta")
    assert text == "día 日本"
    # some HTTP chunks end inside a multi-byte character: alone they are not UTF-8
    undecodable = 0
    for chunk in chunks:
        try:
            chunk.decode()
        except UnicodeDecodeError:
            undecodable += 1
    assert undecodable >= 2


@pytest.mark.parametrize(("fault", "complete"), [(None, True), ("drop", False), ("error", True)])
def test_openai_wire_ends_as_the_fault_says(
    oai: OpenAIStub, fault: FaultKind | None, complete: bool
) -> None:
    oai.chunk_interval = 0
    plan = StreamPlan(fault=StreamFault(2, fault) if fault else None)
    oai.reply(text="abc", usage=OpenAIUsage(1, 1), stream=plan)
    body = {"messages": [], "stream": True, "stream_options": {"include_usage": True}}

    raw = raw_stream(oai, "/v1/chat/completions", body)

    _, chunks, ended = dechunk(raw)
    assert ended is complete
    data = [c.decode().removeprefix("data: ").removesuffix("\n\n") for c in chunks]
    if fault is None:
        assert data[-1] == "[DONE]"
        usage = json.loads(data[-2])
        assert (usage["choices"], usage["usage"]["prompt_tokens"]) == ([], 1)
        assert all(json.loads(d)["usage"] is None for d in data[:-2])
    else:
        assert len(data) == 2 + (fault == "error")
    if fault == "error":
        assert json.loads(data[-1])["error"]["type"] == "server_error"
