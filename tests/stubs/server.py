"""A scriptable loopback HTTP server: the base of the provider stubs.

The stubs plug in at the lowest layer, the network: the code under test is the real
provider SDK and the real langchain client, talking HTTP to 127.0.0.1. Each test queues
the replies (or faults) the server will send, in order, and reads back every request body
it received. Nothing leaves the machine.

A queued reply is answered whole, or streamed as server-sent events when the request body
says ``"stream": true`` and the reply knows how to render itself as a stream (the provider
stubs' replies do); :mod:`stubs.sse` does the pacing, holds and mid-stream faults.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Generic, Self, TypeVar

from .sse import (
    DEFAULT_PLAN,
    Gate,
    ScriptError,
    SSEEvent,
    StreamPlan,
    StreamRecord,
    aborts,
    send_stream,
)

__all__ = [
    "DEFAULT_CHUNK_INTERVAL",
    "DEFAULT_FRAGMENT_CHARS",
    "NO_REPLY_STATUS",
    "ReceivedRequest",
    "Reply",
    "StubServer",
    "pairing_problem",
]

NO_REPLY_STATUS = 599
"""Sent when a request arrives and nothing is queued; no real API uses it."""

DEFAULT_CHUNK_INTERVAL = 0.05
"""Seconds between streamed events unless the stub or the reply says otherwise."""

DEFAULT_FRAGMENT_CHARS = 6
"""Characters per streamed text or tool-argument fragment unless the stub says otherwise."""


@dataclass(frozen=True, slots=True)
class Reply:
    """One queued HTTP response: a JSON body and a status (an error status is a fault)."""

    body: Mapping[str, Any]
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    render_stream: Callable[[Any], Sequence[SSEEvent]] | None = None
    """The same reply as SSE events, given the request body; ``None``: always sent whole."""
    stream: StreamPlan = DEFAULT_PLAN
    """Pacing, hold and fault when it is streamed."""


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One request the stub received, with its JSON body parsed."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    client_port: int
    """The client's port: equal ports mean one reused (keep-alive) connection."""

    @property
    def wants_stream(self) -> bool:
        """The body asked for a server-sent event stream (``"stream": true``)."""
        return isinstance(self.body, Mapping) and self.body.get("stream") is True


class _LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True

    def shutdown_request(self, request: Any) -> None:
        if aborts(request):  # a "reset" fault: close with RST, no FIN first
            self.close_request(request)
        else:
            super().shutdown_request(request)


UsageT = TypeVar("UsageT")
"""The usage record type a provider's stub queues replies with."""


class StubServer(Generic[UsageT]):
    """Serves queued replies in order on ``POST route``; records every request.

    Use it as a context manager (the pytest fixtures do): it binds a free port on
    127.0.0.1 and serves from a daemon thread until the block ends. By default each
    connection is closed after one response (HTTP/1.0); ``keep_alive=True`` speaks
    HTTP/1.1 with persistent connections, as the real APIs do, so clients pool them.
    :meth:`stop` closes every open connection either way. Streams are always framed as
    HTTP/1.1 chunked bodies (with ``Connection: close`` unless ``keep_alive``).

    ``chunk_interval`` (seconds between streamed events) and ``fragment_chars`` (size of
    the text and tool-argument fragments of replies queued afterwards) are the defaults
    for every reply; a reply's :class:`StreamPlan` overrides the interval.
    """

    route: ClassVar[str] = "/"
    stream_error_status: ClassVar[int] = 500
    """The error a ``StreamFault(how="error")`` with no status sends."""
    stream_error_event: ClassVar[str | None] = None
    """The SSE ``event`` name of a mid-stream error (``None``: a bare ``data`` line)."""

    def __init__(
        self,
        *,
        keep_alive: bool = False,
        chunk_interval: float = DEFAULT_CHUNK_INTERVAL,
        fragment_chars: int = DEFAULT_FRAGMENT_CHARS,
    ) -> None:
        if not chunk_interval >= 0:
            raise ScriptError("chunk_interval", f"must be >= 0 seconds, got {chunk_interval}")
        if fragment_chars < 1:
            raise ScriptError("fragment_chars", f"must be >= 1, got {fragment_chars}")
        self.keep_alive = keep_alive
        self.chunk_interval = chunk_interval
        """Seconds between streamed events for replies whose plan has no ``interval``."""
        self.fragment_chars = fragment_chars
        """Characters per streamed fragment, for replies queued from now on."""
        self._gate = Gate()
        self._stopping = threading.Event()
        self._streams: list[StreamRecord] = []
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stream_ended = threading.Condition(self._lock)
        self._queue: deque[Reply] = deque()
        self._requests: list[ReceivedRequest] = []
        self._served: list[Reply] = []
        self._unexpected: list[ReceivedRequest] = []
        self._rejected: list[tuple[ReceivedRequest, str]] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port = 0
        self._ids = 0
        self.reported: list[UsageT] = []
        """Usage of every successful reply queued, in order (not those with a stream fault)."""

    def _next_id(self) -> int:
        """A new number for the ids of the next reply queued (1, 2, ...)."""
        self._ids += 1
        return self._ids

    # -- lifecycle --------------------------------------------------------------------
    def start(self) -> Self:
        """Bind a free loopback port and start serving."""
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if stub.keep_alive else "HTTP/1.0"
            disable_nagle_algorithm = True  # streamed events leave one by one

            def setup(self) -> None:
                super().setup()
                with stub._lock:
                    stub._connections.add(self.connection)

            def finish(self) -> None:
                with stub._lock:
                    stub._connections.discard(self.connection)
                super().finish()

            def do_POST(self) -> None:
                stub._handle(self)

            def do_GET(self) -> None:
                stub._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                return  # keep test output clean

        self._stopping = threading.Event()
        self._httpd = _LoopbackServer(("127.0.0.1", 0), Handler)
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},  # how soon stop() is noticed
            name=type(self).__name__,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port; later requests get "connection refused".

        Streams still running end at their next event (held ones too).
        """
        self._stopping.set()
        self._gate.wake()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        with self._lock:
            open_connections = list(self._connections)
        for conn in open_connections:  # persistent connections end with the server
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._port}"

    # -- scripting --------------------------------------------------------------------
    def enqueue(self, *replies: Reply) -> None:
        """Queue replies; each request takes the next one."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        """Queued replies not sent yet."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> tuple[ReceivedRequest, ...]:
        """Every request on the route, in arrival order."""
        with self._lock:
            return tuple(self._requests)

    @property
    def bodies(self) -> tuple[Any, ...]:
        """The JSON bodies of :attr:`requests`."""
        return tuple(r.body for r in self.requests)

    @property
    def served(self) -> tuple[Reply, ...]:
        """Replies sent so far, faults included, in order."""
        with self._lock:
            return tuple(self._served)

    @property
    def unexpected(self) -> tuple[ReceivedRequest, ...]:
        """Requests that found nothing queued or hit an unknown path."""
        with self._lock:
            return tuple(self._unexpected)

    @property
    def rejected(self) -> tuple[tuple[ReceivedRequest, str], ...]:
        """Requests refused with a 400 by :meth:`validate`, with the reason."""
        with self._lock:
            return tuple(self._rejected)

    @property
    def streams(self) -> tuple[StreamRecord, ...]:
        """One record per streamed answer, in the order the streams ended."""
        with self._lock:
            return tuple(self._streams)

    def wait_streams(self, count: int = 1, timeout: float = 5.0) -> tuple[StreamRecord, ...]:
        """:attr:`streams` once at least ``count`` have ended (``TimeoutError`` if they do
        not within ``timeout`` seconds). A client is done with a stream at its last event,
        a moment before the server has finished with it: read records through this."""
        with self._stream_ended:
            if not self._stream_ended.wait_for(lambda: len(self._streams) >= count, timeout):
                raise TimeoutError(f"{len(self._streams)} of {count} streams ended")
            return tuple(self._streams)

    @property
    def held(self) -> int:
        """Streams waiting at their ``hold_after`` point now."""
        return self._gate.waiting

    def wait_held(self, timeout: float = 5.0) -> bool:
        """Block until a stream is held (``False`` if none is after ``timeout`` seconds)."""
        return self._gate.wait_for_waiting(timeout)

    def release(self, count: int = 1) -> None:
        """Let ``count`` held streams go on; a release before the hold is kept for it."""
        self._gate.release(count)

    def assert_clean(self) -> None:
        """Every queued reply was used and every request was well-formed and answered."""
        assert not self.rejected, f"rejected requests: {[why for _, why in self.rejected]}"
        assert not self.unexpected, f"unexpected requests: {self.unexpected}"
        assert self.remaining == 0, f"{self.remaining} queued replies were never requested"

    # -- serving ----------------------------------------------------------------------
    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        path = handler.path.split("?", 1)[0]
        request = ReceivedRequest(
            handler.command,
            path,
            {k.lower(): v for k, v in handler.headers.items()},
            body,
            handler.client_address[1],
        )
        invalid = self.validate(body) if path == self.route else None
        with self._lock:
            if handler.command != "POST" or path != self.route:
                self._unexpected.append(request)
                reply: Reply | None = Reply(self.error_body(404, f"no route {path}"), 404)
            elif invalid is not None:
                self._requests.append(request)
                self._rejected.append((request, invalid))
                reply = Reply(self.error_body(400, invalid), 400)
            elif self._queue:
                self._requests.append(request)
                reply = self._queue.popleft()
                self._served.append(reply)
            else:
                self._requests.append(request)
                self._unexpected.append(request)
                reply = None
        if reply is None:
            reply = Reply(
                self.error_body(NO_REPLY_STATUS, "stub has no reply queued"), NO_REPLY_STATUS
            )
        if request.wants_stream and reply.status == 200 and reply.render_stream is not None:
            self._stream(handler, reply, body)
            return
        data = json.dumps(reply.body).encode()
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _stream(self, handler: BaseHTTPRequestHandler, reply: Reply, body: Any) -> None:
        assert reply.render_stream is not None
        plan = reply.stream
        fault = plan.fault
        status = fault.status if fault is not None and fault.status else self.stream_error_status
        message = fault.message if fault is not None else ""
        record = send_stream(
            handler,
            reply.render_stream(body),
            plan,
            interval=self.chunk_interval if plan.interval is None else plan.interval,
            error_event=SSEEvent(
                json.dumps(self.error_body(status, message)), self.stream_error_event
            ),
            keep_alive=self.keep_alive,
            headers=reply.headers,
            stopping=self._stopping,
            gate=self._gate,
        )
        with self._stream_ended:
            self._streams.append(record)
            self._stream_ended.notify_all()

    def validate(self, body: Any) -> str | None:
        """Why the real API would refuse ``body`` with a 400, or ``None`` if it is fine.

        A rejected request consumes no queued reply.
        """
        return None

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        """The provider's error body for ``status``; subclasses speak their API's format."""
        return {"error": {"message": message, "code": status}}


def pairing_problem(pairs: list[tuple[list[str], list[str]]], id_field: str) -> str | None:
    """What is wrong with (call ids, result ids) pairs, as the APIs word it; ``None`` if
    every call got exactly one result and every result answers a call."""
    for calls, results in pairs:
        same = sorted({c for c in calls if calls.count(c) > 1})
        if same:
            return f"tool call ids must be unique ({id_field}): {', '.join(same)}"
        missing = [c for c in calls if c not in results]
        if missing:
            return f"tool calls without a result ({id_field}): {', '.join(missing)}"
        extra = [r for r in results if r not in calls]
        if extra:
            return f"results for unknown tool calls ({id_field}): {', '.join(extra)}"
        repeated = sorted({r for r in results if results.count(r) > 1})
        if repeated:
            return f"tool calls answered more than once ({id_field}): {', '.join(repeated)}"
    return None
