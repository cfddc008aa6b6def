"""``chat_base``: the one base of the scripted, recording and replay chat models.

langchain-core's four call bodies are written once; a model only says how one call goes
(a ``ChatCall``). These tests drive that contract through the public ``invoke`` / ``stream``
entry points, with a tiny model of their own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from loopkit import invalid_call, tool_call, usage
from pydantic import Field

from toolloop_lab import RecordingChatModel, ReplayChatModel, ScriptedChatModel
from toolloop_lab._models.base import ChatCall, ChatModelBase, aggregate_chunks, chunks_of

PROMPT = [HumanMessage("hi")]


@pytest.mark.parametrize("model", [ScriptedChatModel, RecordingChatModel, ReplayChatModel])
def test_the_three_models_write_no_call_body_of_their_own(model: type[Any]) -> None:
    assert issubclass(model, ChatModelBase)
    for body in ("_generate", "_agenerate", "_stream", "_astream"):
        assert getattr(model, body) is getattr(ChatModelBase, body), body


@pytest.mark.parametrize(
    "reply",
    [
        AIMessage("a reply long enough to come in several pieces", usage_metadata=usage(3, 9)),
        AIMessage(
            "calls",
            tool_calls=[tool_call("echo", {"text": "x"}, "c1")],
            invalid_tool_calls=[invalid_call("echo", '{"text": oops}', "c2")],
            usage_metadata=usage(1, 2),
            response_metadata={"model_name": "m", "finish_reason": "tool_calls"},
        ),
        AIMessage([{"type": "text", "text": "blocks"}], usage_metadata=usage(1, 1)),
        AIMessage(""),
    ],
)
def test_chunks_add_up_to_the_reply(reply: AIMessage) -> None:
    chunks = chunks_of(reply)
    whole = aggregate_chunks(chunks)
    assert chunks[-1].chunk_position == "last"
    assert all(c.chunk_position is None for c in chunks[:-1])
    assert whole.content == reply.content
    assert whole.tool_calls == reply.tool_calls
    assert [(c["id"], c["args"]) for c in whole.invalid_tool_calls] == [
        (c["id"], c["args"]) for c in reply.invalid_tool_calls
    ]
    assert whole.usage_metadata == reply.usage_metadata
    assert whole.response_metadata == reply.response_metadata


class _Call(ChatCall):
    def __init__(self, log: list[Any], *, refuse: bool, chunks: Sequence[str]) -> None:
        self.log = log
        self.refuse = refuse
        self.chunks = chunks

    def invoke(self) -> AIMessage:
        return AIMessage("whole")

    def stream(self) -> Iterator[AIMessageChunk]:
        for i, text in enumerate(self.chunks):
            if text == "!":
                raise ConnectionError("cut")
            last = i == len(self.chunks) - 1
            yield AIMessageChunk(content=text, chunk_position="last" if last else None)

    def finish(self, reply: AIMessage, chunks: Sequence[AIMessageChunk] | None) -> None:
        self.log.append(("finish", reply.text, None if chunks is None else len(chunks)))
        if self.refuse:
            raise OSError("cannot keep it")

    def fail(self, exc: Exception, chunks: Sequence[AIMessageChunk] | None) -> None:
        self.log.append(("fail", type(exc).__name__, None if chunks is None else len(chunks)))


class _Model(ChatModelBase):
    refuse: bool = False
    pieces: tuple[str, ...] = ("a", "b", "c")
    log: list[Any] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "test-base"

    def _start_call(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatCall:
        return _Call(self.log, refuse=self.refuse, chunks=self.pieces)


def test_finish_sees_the_whole_reply_invoked_or_streamed() -> None:
    model = _Model(log=[])
    assert model.invoke(PROMPT).text == "whole"
    assert [c.content for c in model.stream(PROMPT)] == ["a", "b", "c"]
    assert model.log == [("finish", "whole", None), ("finish", "abc", 3)]


async def test_a_refused_finish_withholds_the_last_chunk() -> None:
    model = _Model(refuse=True, log=[])
    got: list[AIMessageChunk] = []

    async def drain() -> None:
        async for chunk in model.astream(PROMPT):
            got.append(chunk)

    with pytest.raises(OSError, match="cannot keep it"):
        await drain()
    assert [c.content for c in got] == ["a", "b"]  # the stream never looked complete
    assert model.log == [("finish", "abc", 3)]


def test_a_stream_cut_midway_passes_on_what_arrived_then_fails() -> None:
    model = _Model(pieces=("a", "b", "!"), log=[])
    got: list[AIMessageChunk] = []
    with pytest.raises(ConnectionError):
        got.extend(model.stream(PROMPT))
    assert [c.content for c in got] == ["a", "b"]
    assert model.log == [("fail", "ConnectionError", 2)]


def test_a_stream_of_nothing_is_a_failure() -> None:
    model = _Model(pieces=(), log=[])
    with pytest.raises(ValueError, match="without a chunk"):
        list(model.stream(PROMPT))
    assert model.log == [("fail", "ValueError", 0)]


def test_scripted_model_reports_a_per_call_model_override() -> None:
    named = AIMessage("x", response_metadata={"model_name": "named-by-the-item"})
    model = ScriptedChatModel(["plain", named, "streamed"], model_name="base-name")
    assert model.invoke(PROMPT, model="override").response_metadata["model_name"] == "override"
    assert model.invoke(PROMPT, model="override").response_metadata["model_name"] == (
        "named-by-the-item"
    )
    streamed = aggregate_chunks(list(model.stream(PROMPT, model="override")))
    assert streamed.response_metadata["model_name"] == "override"
