"""Anthropic Messages stub: ``POST /v1/messages``, whole or streamed.

Replies use the real wire format: ``content`` is a list of ``text`` and ``tool_use``
blocks, ``stop_reason`` is ``tool_use`` or ``end_turn``, and ``usage`` has
``input_tokens`` (the *uncached* input only), ``output_tokens``,
``cache_read_input_tokens`` and ``cache_creation_input_tokens``.

A request with ``"stream": true`` gets the same reply as named events
(:func:`message_events`): ``message_start`` (input usage), ``ping``, then per block
``content_block_start`` / ``content_block_delta`` (``text_delta`` fragments, or
``input_json_delta`` fragments of the tool input) / ``content_block_stop``, then
``message_delta`` (``stop_reason`` and the whole usage, cumulative as the API reports it:
langchain-anthropic reads usage from this event only) and ``message_stop``.
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

__all__ = ["AnthropicStub", "AnthropicToolUse", "AnthropicUsage", "message_events", "tool_pairs"]


@dataclass(frozen=True, slots=True)
class AnthropicUsage:
    """Usage as Anthropic reports it: the three input figures are disjoint."""

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @property
    def total_input(self) -> int:
        """All input tokens, cached ones included (what langchain-anthropic reports)."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def wire(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }


@dataclass(frozen=True, slots=True)
class AnthropicToolUse:
    """A ``tool_use`` block to send.

    ``fragments`` fixes the ``partial_json`` pieces it streams as; joined they must decode
    to ``input`` (write escapes such as ``\\u00e9`` into them freely). Without them the
    pieces are ``json.dumps(input)`` cut every ``stub.fragment_chars`` characters.
    """

    name: str
    input: Mapping[str, Any]
    id: str | None = None
    fragments: Sequence[str] | None = None

    def wire_fragments(self, size: int) -> tuple[str, ...]:
        """The ``partial_json`` pieces of this block when streamed."""
        if self.fragments is None:
            return pieces(json.dumps(dict(self.input)), size)
        text = "".join(self.fragments)
        try:
            decoded = json.loads(text)
        except json.JSONDecodeError:
            decoded = None
        if decoded != self.input:
            raise ScriptError("fragments", f"{text!r} does not decode to the input")
        return tuple(self.fragments)


class AnthropicStub(StubServer[AnthropicUsage]):
    """Scriptable Messages server; see :mod:`stubs.server` for the mechanics."""

    route = "/v1/messages"
    model = "claude-3-5-haiku-20241022"
    """What replies report as ``model`` (genai-prices knows it)."""
    stream_error_status = 529  # "overloaded_error", the usual mid-stream failure
    stream_error_event = "error"

    @property
    def base_url(self) -> str:
        """What ``ChatAnthropic(base_url=...)`` takes (the SDK adds ``/v1/messages``)."""
        return self.origin

    def reply(
        self,
        *,
        text: str | None = None,
        tool_uses: Sequence[AnthropicToolUse] = (),
        usage: AnthropicUsage,
        stop_reason: str | None = None,
        model: str | None = None,
        stream: StreamPlan = DEFAULT_PLAN,
    ) -> list[str]:
        """Queue one message; returns the ``tool_use`` ids it will carry.

        It is streamed following ``stream`` if the request asks for a stream.
        """
        inputs = [u.wire_fragments(self.fragment_chars) for u in tool_uses]
        n = self._next_id()
        content: list[dict[str, Any]] = []
        if text is not None:
            content.append({"type": "text", "text": text})
        ids = [u.id or f"toolu_stub{n}_{i}" for i, u in enumerate(tool_uses)]
        content.extend(
            {"type": "tool_use", "id": i, "name": u.name, "input": dict(u.input)}
            for i, u in zip(ids, tool_uses, strict=True)
        )
        body = {
            "id": f"msg_stub{n}",
            "type": "message",
            "role": "assistant",
            "model": model or self.model,
            "content": content,
            "stop_reason": stop_reason or ("tool_use" if tool_uses else "end_turn"),
            "stop_sequence": None,
            "usage": usage.wire(),
        }
        if stream.fault is None:
            self.reported.append(usage)
        text_pieces = pieces(text, self.fragment_chars) if text is not None else ()
        render = partial(message_events, body, text_pieces, tuple(inputs))
        self.enqueue(Reply(body, render_stream=render, stream=stream))
        return ids

    def validate(self, body: Any) -> str | None:
        """The API refuses ``tool_use`` blocks not answered exactly once by a ``tool_result``."""
        if not isinstance(body, Mapping) or not isinstance(body.get("messages"), list):
            return "messages: Field required"
        return pairing_problem(tool_pairs(body), "tool_use_id")

    def fault(self, status: int, message: str = "stub fault") -> None:
        """Queue an HTTP error in Anthropic's error format (429, 500, 529, ...)."""
        self.enqueue(Reply(self.error_body(status, message), status))

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}.get(
            status, "invalid_request_error"
        )
        return {"type": "error", "error": {"type": kind, "message": message}}

    # -- totals of what was reported ---------------------------------------------------
    @property
    def input_tokens(self) -> int:
        """Sum of the wire ``input_tokens`` (uncached input only)."""
        return sum(u.input_tokens for u in self.reported)

    @property
    def output_tokens(self) -> int:
        return sum(u.output_tokens for u in self.reported)

    @property
    def cache_read_input_tokens(self) -> int:
        return sum(u.cache_read_input_tokens for u in self.reported)

    @property
    def cache_creation_input_tokens(self) -> int:
        return sum(u.cache_creation_input_tokens for u in self.reported)


def message_events(
    body: Mapping[str, Any],
    text: Sequence[str],
    inputs: Sequence[Sequence[str]],
    request: Any,
) -> list[SSEEvent]:
    """The ``message`` ``body`` as the events Anthropic streams for it.

    ``text`` (the text block) and ``inputs`` (one ``partial_json`` list per ``tool_use``
    block) are the content cut as it should stream. ``request`` is not needed: Anthropic
    streams the same events whatever the request says.
    """
    usage = body["usage"]
    start = {
        **body,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": min(1, usage["output_tokens"])},
    }
    events = [_event({"type": "message_start", "message": start}), _event({"type": "ping"})]
    tool_inputs = iter(inputs)
    for index, block in enumerate(body["content"]):
        opened: dict[str, Any]
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in text]
        else:
            opened = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in ("", *next(tool_inputs))  # the API opens with an empty piece
            ]
        events.append(
            _event({"type": "content_block_start", "index": index, "content_block": opened})
        )
        events.extend(
            _event({"type": "content_block_delta", "index": index, "delta": delta})
            for delta in deltas
        )
        events.append(_event({"type": "content_block_stop", "index": index}))
    stop = {"stop_reason": body["stop_reason"], "stop_sequence": body["stop_sequence"]}
    events.append(_event({"type": "message_delta", "delta": stop, "usage": usage}))
    events.append(_event({"type": "message_stop"}))
    return events


def _event(data: Mapping[str, Any]) -> SSEEvent:
    """A named event as the API streams it: no spaces, UTF-8 left as is."""
    return SSEEvent(json.dumps(data, separators=(",", ":"), ensure_ascii=False), str(data["type"]))


def tool_pairs(body: Mapping[str, Any]) -> list[tuple[list[str], list[str]]]:
    """For each assistant message with ``tool_use`` blocks in a request body: (the
    ``tool_use`` ids, the ``tool_use_id`` of every ``tool_result`` block in the user
    message(s) that follow it before the next assistant message)."""
    pairs: list[tuple[list[str], list[str]]] = []
    for message in body["messages"]:
        content = message["content"]
        blocks = content if isinstance(content, list) else []
        if message["role"] == "assistant":
            pairs.append(([b["id"] for b in blocks if b.get("type") == "tool_use"], []))
        else:
            results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
            if results:
                if not pairs:  # a result before any assistant message answers nothing
                    pairs.append(([], []))
                pairs[-1][1].extend(results)
    return [p for p in pairs if p[0] or p[1]]
