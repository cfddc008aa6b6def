"""OpenAI Chat Completions stub: ``POST /v1/chat/completions``, whole or streamed.

Replies use the real wire format: ``choices[0].message.tool_calls[].function.arguments``
is a JSON *string* (so a test can send text that is not valid JSON), and ``usage`` has
``prompt_tokens``, ``completion_tokens`` and ``prompt_tokens_details.cached_tokens``
(cached tokens are part of ``prompt_tokens``, as OpenAI reports them).

A request with ``"stream": true`` gets the same reply as ``chat.completion.chunk`` events
(:func:`completion_chunks`): a role chunk, the text in fragments, each tool call with its
index, id and name in its first fragment and its arguments text spread over the following
ones, a chunk with ``finish_reason``, a ``usage`` chunk with no choices when the request
has ``stream_options.include_usage``, then ``data: [DONE]``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from .server import (
    Reply,
    StubServer,
    pairing_problem,
)
from .sse import DEFAULT_PLAN, ScriptError, SSEEvent, StreamPlan, pieces

__all__ = ["OpenAIStub", "OpenAIToolCall", "OpenAIUsage", "completion_chunks", "tool_pairs"]


@dataclass(frozen=True, slots=True)
class OpenAIUsage:
    """Usage as OpenAI reports it; ``cached_tokens`` is part of ``prompt_tokens``."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0

    def wire(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }


@dataclass(frozen=True, slots=True)
class OpenAIToolCall:
    """A tool call to send; a ``str`` ``arguments`` goes on the wire verbatim.

    ``fragments`` fixes how the arguments text is cut when streamed; their concatenation
    *is* the wire text, so it must equal a ``str`` ``arguments`` or decode to a mapping
    one (write escapes such as ``\\u00e9`` into them freely). Without ``fragments`` the
    text is ``json.dumps(arguments)`` cut every ``stub.fragment_chars`` characters.
    ``index`` is the number its stream chunks carry (by default its position among the
    reply's calls); a provider may send any number there, negative or huge.
    """

    name: str
    arguments: Mapping[str, Any] | str
    id: str | None = None
    fragments: Sequence[str] | None = None
    index: int | None = None

    def wire_fragments(self, size: int) -> tuple[str, ...]:
        """The arguments text as streamed; joined, it is the text sent whole."""
        if self.fragments is None:
            args = self.arguments
            return pieces(args if isinstance(args, str) else json.dumps(args), size)
        text = "".join(self.fragments)
        if isinstance(self.arguments, str):
            if text != self.arguments:
                raise ScriptError("fragments", f"join to {text!r}, not the arguments")
        elif _loads(text) != self.arguments:
            raise ScriptError("fragments", f"{text!r} does not decode to the arguments")
        return tuple(self.fragments)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


class OpenAIStub(StubServer[OpenAIUsage]):
    """Scriptable Chat Completions server; see :mod:`stubs.server` for the mechanics."""

    route = "/v1/chat/completions"
    model = "gpt-4o-mini-2024-07-18"
    """What replies report as ``model`` (genai-prices knows it)."""

    @property
    def base_url(self) -> str:
        """What ``ChatOpenAI(base_url=...)`` takes."""
        return f"{self.origin}/v1"

    def reply(
        self,
        *,
        text: str | None = None,
        tool_calls: Sequence[OpenAIToolCall] = (),
        usage: OpenAIUsage,
        finish_reason: str | None = None,
        model: str | None = None,
        stream: StreamPlan = DEFAULT_PLAN,
    ) -> list[str]:
        """Queue one completion; returns the tool call ids it will carry.

        It is streamed following ``stream`` if the request asks for a stream.
        """
        args = [c.wire_fragments(self.fragment_chars) for c in tool_calls]
        n = self._next_id()
        calls = [
            {
                "id": c.id or f"call_stub{n}_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": "".join(a)},
            }
            for i, (c, a) in enumerate(zip(tool_calls, args, strict=True))
        ]
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        body = {
            "id": f"chatcmpl-stub{n}",
            "object": "chat.completion",
            "created": 1_700_000_000 + n,
            "model": model or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
                }
            ],
            "usage": usage.wire(),
            "system_fingerprint": "fp_stub",
            "service_tier": "default",
        }
        if stream.fault is None:
            self.reported.append(usage)
        text_pieces = pieces(text, self.fragment_chars) if text is not None else None
        indexes = tuple(i if c.index is None else c.index for i, c in enumerate(tool_calls))
        render = partial(completion_chunks, body, text_pieces, tuple(args), indexes=indexes)
        self.enqueue(Reply(body, render_stream=render, stream=stream))
        return [str(c["id"]) for c in calls]

    def validate(self, body: Any) -> str | None:
        """The API refuses tool calls not answered exactly once by ``role="tool"`` messages."""
        if not isinstance(body, Mapping) or not isinstance(body.get("messages"), list):
            return "'messages' is a required property"
        return pairing_problem(tool_pairs(body), "tool_call_id")

    def fault(
        self, status: int, message: str = "stub fault", *, headers: Mapping[str, str] | None = None
    ) -> None:
        """Queue an HTTP error in OpenAI's error format (429, 500, ...), with ``headers``
        (a 429's ``Retry-After``, say)."""
        self.enqueue(Reply(self.error_body(status, message), status, headers=dict(headers or {})))

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {429: "requests", 500: "server_error"}.get(status, "invalid_request_error")
        code = {429: "rate_limit_exceeded"}.get(status)
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    # -- totals of what was reported ---------------------------------------------------
    @property
    def prompt_tokens(self) -> int:
        return sum(u.prompt_tokens for u in self.reported)

    @property
    def completion_tokens(self) -> int:
        return sum(u.completion_tokens for u in self.reported)

    @property
    def cached_tokens(self) -> int:
        return sum(u.cached_tokens for u in self.reported)


def completion_chunks(
    body: Mapping[str, Any],
    text: Sequence[str] | None,
    arguments: Sequence[Sequence[str]],
    request: Any,
    *,
    indexes: Sequence[int] | None = None,
) -> list[SSEEvent]:
    """The ``chat.completion`` ``body`` as the stream of chunks OpenAI sends for it.

    ``text`` and ``arguments`` (one fragment list per tool call) are the content cut as it
    should stream; ``request`` is the request body (``stream_options.include_usage``);
    ``indexes`` the number each call's chunks carry (by default its position).
    """
    options = request.get("stream_options") if isinstance(request, Mapping) else None
    include_usage = isinstance(options, Mapping) and options.get("include_usage") is True
    head = {
        "id": body["id"],
        "object": "chat.completion.chunk",
        "created": body["created"],
        "model": body["model"],
        "system_fingerprint": body["system_fingerprint"],
        "service_tier": body["service_tier"],
    }
    choice = body["choices"][0]

    def chunk(delta: Mapping[str, Any], finish_reason: str | None = None) -> SSEEvent:
        data: dict[str, Any] = {
            **head,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if include_usage:
            data["usage"] = None
        return SSEEvent(_compact(data))

    events = [chunk({"role": "assistant", "content": "" if text else None, "refusal": None})]
    events.extend(chunk({"content": piece}) for piece in text or ())
    calls = choice["message"].get("tool_calls") or []
    numbers = range(len(calls)) if indexes is None else indexes
    for index, call, fragments in zip(numbers, calls, arguments, strict=True):
        first = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        events.append(chunk({"tool_calls": [first]}))
        events.extend(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in fragments
        )
    events.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        events.append(SSEEvent(_compact({**head, "choices": [], "usage": body["usage"]})))
    events.append(SSEEvent("[DONE]"))
    return events


def _compact(data: Mapping[str, Any]) -> str:
    """JSON as the APIs stream it: no spaces, UTF-8 left as is."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def tool_pairs(body: Mapping[str, Any]) -> list[tuple[list[str], list[str]]]:
    """For each assistant message with tool calls in a request body: (call ids, the
    ``tool_call_id`` of every ``role="tool"`` message that follows it before the next
    assistant message)."""
    pairs: list[tuple[list[str], list[str]]] = []
    for message in body["messages"]:
        role = message["role"]
        if role == "assistant":
            calls = [c["id"] for c in message.get("tool_calls") or []]
            pairs.append((calls, []))
        elif role == "tool":
            if not pairs:  # a result before any assistant message answers nothing
                pairs.append(([], []))
            pairs[-1][1].append(message["tool_call_id"])
    return [p for p in pairs if p[0] or p[1]]
