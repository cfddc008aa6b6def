"""Anthropic Messages stub: ``POST /v1/messages``, non-streaming.

Replies use the real wire format: ``content`` is a list of ``text`` and ``tool_use``
blocks, ``stop_reason`` is ``tool_use`` or ``end_turn``, and ``usage`` has
``input_tokens`` (the *uncached* input only), ``output_tokens``,
``cache_read_input_tokens`` and ``cache_creation_input_tokens``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .server import Reply, StubServer, pairing_problem

__all__ = ["AnthropicStub", "AnthropicToolUse", "AnthropicUsage", "tool_pairs"]


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
    """A ``tool_use`` block to send."""

    name: str
    input: Mapping[str, Any]
    id: str | None = None


class AnthropicStub(StubServer):
    """Scriptable Messages server; see :mod:`stubs.server` for the mechanics."""

    route = "/v1/messages"
    model = "claude-3-5-haiku-20241022"
    """What replies report as ``model`` (genai-prices knows it)."""

    def __init__(self, *, keep_alive: bool = False) -> None:
        super().__init__(keep_alive=keep_alive)
        self._ids = 0
        self.reported: list[AnthropicUsage] = []
        """Usage of every successful reply queued, in order."""

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
    ) -> list[str]:
        """Queue one message; returns the ``tool_use`` ids it will carry."""
        self._ids += 1
        n = self._ids
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
        self.reported.append(usage)
        self.enqueue(Reply(body))
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
