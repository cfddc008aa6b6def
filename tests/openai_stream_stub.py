"""The OpenAI stub, also speaking Chat Completions' streaming wire format.

A request with ``"stream": true`` gets the queued completion as server-sent events, the way
the API sends it: a role delta, the text in pieces, each tool call as an opening delta (id,
name) and argument text in pieces, a last delta with the finish reason, then (when the
request asked for ``stream_options.include_usage``) a chunk with no choices and the usage,
and ``data: [DONE]``. Everything else (queueing, validation, bookkeeping, faults) is the
plain stub's: its reply is captured and re-sent, as events or unchanged.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

from stubs.openai_stub import OpenAIStub

__all__ = ["OpenAIStreamStub", "sse_events"]

PIECE = 7
"""Characters per streamed piece of text or argument text."""


class OpenAIStreamStub(OpenAIStub):
    """:class:`OpenAIStub` that streams when asked to (see the module doc)."""

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        captured = _Captured(handler, raw)
        super()._handle(captured)  # type: ignore[arg-type]
        try:
            request: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            request = None
        streamed = isinstance(request, dict) and request.get("stream") is True
        if captured.status != 200 or not streamed:
            captured.replay(handler)
            return
        options = request.get("stream_options") or {}
        events = sse_events(json.loads(captured.body()), bool(options.get("include_usage")))
        data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        payload = data.encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)


def sse_events(completion: Mapping[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """A ``chat.completion`` body as the ``chat.completion.chunk`` events that stream it."""
    choice = completion["choices"][0]
    message = choice["message"]

    def event(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": completion["id"],
            "object": "chat.completion.chunk",
            "created": completion["created"],
            "model": completion["model"],
            "system_fingerprint": completion.get("system_fingerprint"),
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    events = [event({"role": "assistant", "content": "", "refusal": None})]
    text = message.get("content") or ""
    events.extend(event({"content": text[i : i + PIECE]}) for i in range(0, len(text), PIECE))
    for index, call in enumerate(message.get("tool_calls") or []):
        opening = {"index": index, "id": call["id"], "type": "function"}
        opening["function"] = {"name": call["function"]["name"], "arguments": ""}
        events.append(event({"tool_calls": [opening]}))
        args = call["function"]["arguments"]
        events.extend(
            event(
                {"tool_calls": [{"index": index, "function": {"arguments": args[i : i + PIECE]}}]}
            )
            for i in range(0, len(args), PIECE)
        )
    events.append(event({}, choice["finish_reason"]))
    if include_usage:
        last = event({})
        last["choices"] = []
        last["usage"] = completion["usage"]
        events.append(last)
    return events


class _Captured:
    """Stands in for the request handler so the plain stub's reply can be read back."""

    def __init__(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        self.headers = handler.headers
        self.rfile = io.BytesIO(raw)
        self.wfile = io.BytesIO()
        self.command = handler.command
        self.path = handler.path
        self.client_address = handler.client_address
        self.status = 0
        self.sent_headers: list[tuple[str, str]] = []

    def send_response(self, status: int) -> None:
        self.status = status

    def send_header(self, name: str, value: str) -> None:
        self.sent_headers.append((name, value))

    def end_headers(self) -> None:
        return

    def body(self) -> bytes:
        return self.wfile.getvalue()

    def replay(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(self.status)
        for name, value in self.sent_headers:
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(self.body())
