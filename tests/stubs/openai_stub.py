"""OpenAI Chat Completions stub: ``POST /v1/chat/completions``, non-streaming.

Replies use the real wire format: ``choices[0].message.tool_calls[].function.arguments``
is a JSON *string* (so a test can send text that is not valid JSON), and ``usage`` has
``prompt_tokens``, ``completion_tokens`` and ``prompt_tokens_details.cached_tokens``
(cached tokens are part of ``prompt_tokens``, as OpenAI reports them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .server import Reply, StubServer, pairing_problem

__all__ = ["OpenAIStub", "OpenAIToolCall", "OpenAIUsage", "tool_pairs"]


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
    """A tool call to send; a ``str`` ``arguments`` goes on the wire verbatim."""

    name: str
    arguments: Mapping[str, Any] | str
    id: str | None = None


class OpenAIStub(StubServer):
    """Scriptable Chat Completions server; see :mod:`stubs.server` for the mechanics."""

    route = "/v1/chat/completions"
    model = "gpt-4o-mini-2024-07-18"
    """What replies report as ``model`` (genai-prices knows it)."""

    def __init__(self, *, keep_alive: bool = False) -> None:
        super().__init__(keep_alive=keep_alive)
        self._ids = 0
        self.reported: list[OpenAIUsage] = []
        """Usage of every successful reply queued, in order."""

    @property
    def base_url(self) -> str:
        """What ``ChatOpenAI(base_url=...)`` takes."""
        return f"{self.origin}/v1"

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def reply(
        self,
        *,
        text: str | None = None,
        tool_calls: Sequence[OpenAIToolCall] = (),
        usage: OpenAIUsage,
        finish_reason: str | None = None,
        model: str | None = None,
    ) -> list[str]:
        """Queue one completion; returns the tool call ids it will carry."""
        n = self._next_id()
        calls = [
            {
                "id": c.id or f"call_stub{n}_{i}",
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": c.arguments
                    if isinstance(c.arguments, str)
                    else json.dumps(c.arguments),
                },
            }
            for i, c in enumerate(tool_calls)
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
        self.reported.append(usage)
        self.enqueue(Reply(body))
        return [str(c["id"]) for c in calls]

    def validate(self, body: Any) -> str | None:
        """The API refuses tool calls not answered exactly once by ``role="tool"`` messages."""
        if not isinstance(body, Mapping) or not isinstance(body.get("messages"), list):
            return "'messages' is a required property"
        return pairing_problem(tool_pairs(body), "tool_call_id")

    def fault(self, status: int, message: str = "stub fault") -> None:
        """Queue an HTTP error in OpenAI's error format (429, 500, ...)."""
        self.enqueue(Reply(self.error_body(status, message), status))

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
