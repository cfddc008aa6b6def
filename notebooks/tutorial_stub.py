"""A tiny OpenAI-compatible server for the tutorials: the real ``ChatOpenAI`` client talks to
it over HTTP on 127.0.0.1, so a tutorial records a real provider client's run with no key
and no network.

It answers ``POST /v1/chat/completions`` (whole replies, not streamed) with the replies
queued by :meth:`TutorialStub.reply`, in order, each with its usage; anything else gets a
404, and a request with nothing queued a 500 that says so. The tests use a fuller stub
(``tests/stubs``); this one ships beside the notebooks so that Binder can run them.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class TutorialStub:
    """``with TutorialStub() as stub: ChatOpenAI(base_url=stub.base_url, ...)``."""

    def __init__(self) -> None:
        self._replies: deque[dict[str, Any]] = deque()
        self.requests = 0
        """Chat completion requests answered so far."""
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                elif not stub._replies:
                    self._send(500, {"error": {"message": "the tutorial queued no reply"}})
                else:
                    stub.requests += 1
                    self._send(200, stub._replies.popleft())

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """What ``ChatOpenAI(base_url=...)`` takes."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def reply(
        self,
        text: str = "",
        *,
        tool_calls: Sequence[tuple[str, dict[str, Any]]] = (),
        usage: tuple[int, int] = (100, 20),
    ) -> None:
        """Queue one reply: ``text``, or tool calls as ``(name, arguments)`` pairs."""
        n = len(self._replies) + self.requests
        calls = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(tool_calls)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        self._replies.append(
            {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if calls else "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": usage[0],
                    "completion_tokens": usage[1],
                    "total_tokens": sum(usage),
                },
            }
        )

    def start(self) -> TutorialStub:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: from here on, nothing answers at this address."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> TutorialStub:
        return self.start()

    def __exit__(self, *args: object) -> None:
        self.stop()
