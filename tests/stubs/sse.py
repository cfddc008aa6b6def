"""Server-sent event streams for the provider stubs: framing, pacing, holds and faults.

A provider stub renders a queued reply either whole (one JSON body) or, when the request
says ``"stream": true``, as a list of :class:`SSEEvent` built from the same reply.
:func:`send_stream` writes those events the way the real APIs do, and adds what a test
needs to look inside a stream:

- HTTP/1.1 chunked framing, so a connection dropped part-way is an *incomplete body* to
  the client (with HTTP/1.0 framing a drop would look like a normal end of stream);
- a pause between events (:attr:`StreamPlan.interval`), so fragments arrive while the
  call is still running;
- a hold (:attr:`StreamPlan.hold_after`): the stream stops after N events until the test
  calls ``stub.release()``, so "the call is still running" is a fact, not a race;
- a fault (:class:`StreamFault`): after N events the server drops the connection, resets
  it, or sends the provider's error event.

Each streamed answer leaves a :class:`StreamRecord` (when each event went out, how the
stream ended) for the test to compare with what the client saw.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from itertools import pairwise
from typing import Literal

__all__ = [
    "DEFAULT_PLAN",
    "SPLIT_PAUSE",
    "FaultKind",
    "Gate",
    "SSEEvent",
    "ScriptError",
    "StreamFault",
    "StreamOutcome",
    "StreamPlan",
    "StreamRecord",
    "aborts",
    "pieces",
    "send_stream",
    "split_at",
]

SPLIT_PAUSE = 0.005
"""Seconds between the two halves of an event written with ``split_writes``: long enough
for the halves to reach the client in separate reads."""

FaultKind = Literal["drop", "reset", "error"]
"""How a stream fails part-way (see :class:`StreamFault`)."""
StreamOutcome = Literal["complete", "drop", "reset", "error", "client_closed", "stopped"]
"""How a streamed answer ended (see :attr:`StreamRecord.outcome`)."""


class ScriptError(ValueError):
    """A test scripted a stub reply the stub cannot send; ``field`` names the argument."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One server-sent event: a ``data`` line and, for Anthropic, an ``event`` name."""

    data: str
    event: str | None = None

    def encode(self) -> bytes:
        head = f"event: {self.event}\n" if self.event is not None else ""
        return f"{head}data: {self.data}\n\n".encode()


@dataclass(frozen=True, slots=True)
class StreamFault:
    """How a streamed reply fails after ``after`` events have been sent.

    - ``"drop"``: the server closes the connection cleanly before the body is complete;
    - ``"reset"``: the server aborts the connection (TCP RST);
    - ``"error"``: the server sends the provider's error event, then ends the stream
      (``status`` picks the error kind, as for ``stub.fault``; ``None`` is the provider's
      usual mid-stream error: OpenAI 500 ``server_error``, Anthropic 529
      ``overloaded_error``).

    An ``after`` at or past the number of events the stream has fails it after the last
    event, before the end of the body.
    """

    after: int
    how: FaultKind = "drop"
    status: int | None = None
    message: str = "stub stream fault"

    def __post_init__(self) -> None:
        if self.after < 0:
            raise ScriptError("after", f"must be >= 0, got {self.after}")
        if self.how not in ("drop", "reset", "error"):
            raise ScriptError("how", f"must be 'drop', 'reset' or 'error', got {self.how!r}")


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """How one queued reply is streamed, if the request asks for a stream.

    A non-streaming request gets the reply whole and ignores the plan.
    """

    interval: float | None = None
    """Seconds between events; ``None`` takes the stub's ``chunk_interval``."""
    fault: StreamFault | None = None
    """Fail the stream part-way (the reply is then not in the stub's ``reported``)."""
    hold_after: int | None = None
    """After this many events, wait for ``stub.release()`` before sending the rest."""
    split_writes: bool = False
    """Write each event in two pieces, cut inside its first multi-byte UTF-8 character
    (or in its middle), so the client's SSE decoder meets partial characters and lines."""

    def __post_init__(self) -> None:
        if self.interval is not None and not self.interval >= 0:
            raise ScriptError("interval", f"must be >= 0 seconds, got {self.interval}")
        if self.hold_after is not None and self.hold_after < 0:
            raise ScriptError("hold_after", f"must be >= 0, got {self.hold_after}")


DEFAULT_PLAN = StreamPlan()
"""Stream at the stub's pace, no hold, no fault."""


@dataclass(frozen=True, slots=True)
class StreamRecord:
    """What one streamed answer did, recorded when it ended."""

    planned: int
    """Events the full stream has (the terminating ``[DONE]``/``message_stop`` included)."""
    sent_at: tuple[float, ...]
    """``time.monotonic()`` after each event was written, in order."""
    outcome: StreamOutcome
    """``complete``; the fault that ended it (``drop``, ``reset``, ``error``: the error
    event is not counted in :attr:`sent`); ``client_closed`` (the client went away);
    ``stopped`` (the stub was stopped)."""

    @property
    def sent(self) -> int:
        """Events written before the stream ended."""
        return len(self.sent_at)


def pieces(text: str, size: int) -> tuple[str, ...]:
    """``text`` in consecutive pieces of ``size`` characters (the last may be shorter)."""
    if size < 1:
        raise ScriptError("fragment_chars", f"must be >= 1, got {size}")
    return tuple(text[i : i + size] for i in range(0, len(text), size))


def split_at(text: str, *cuts: int) -> tuple[str, ...]:
    """``text`` cut at the given character offsets (strictly increasing, inside the text)."""
    bounds = list(pairwise([0, *cuts, len(text)]))
    if any(a >= b for a, b in bounds):
        raise ScriptError("cuts", f"must increase strictly inside 0..{len(text)}, got {cuts}")
    return tuple(text[a:b] for a, b in bounds)


class Gate:
    """Where held streams wait: each ``release()`` lets one held stream (now or later) go on."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting = 0
        self._permits = 0

    def hold(self, stopping: threading.Event) -> None:
        with self._cond:
            self._waiting += 1
            self._cond.notify_all()
            try:
                self._cond.wait_for(lambda: self._permits > 0 or stopping.is_set())
                if self._permits > 0:
                    self._permits -= 1
            finally:
                self._waiting -= 1

    def release(self, count: int = 1) -> None:
        with self._cond:
            self._permits += count
            self._cond.notify_all()

    def wake(self) -> None:
        """Let waiters re-check the stop flag."""
        with self._cond:
            self._cond.notify_all()

    @property
    def waiting(self) -> int:
        with self._cond:
            return self._waiting

    def wait_for_waiting(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._waiting > 0, timeout)


def aborts(conn: socket.socket) -> bool:
    """Whether ``conn`` was set to close with a reset (``SO_LINGER`` on, zero seconds)."""
    try:
        on, seconds = struct.unpack("ii", conn.getsockopt(socket.SOL_SOCKET, socket.SO_LINGER, 8))
    except OSError:
        return False
    return bool(on) and seconds == 0


def send_stream(
    handler: BaseHTTPRequestHandler,
    events: Sequence[SSEEvent],
    plan: StreamPlan,
    *,
    interval: float,
    error_event: SSEEvent,
    keep_alive: bool,
    headers: Mapping[str, str],
    stopping: threading.Event,
    gate: Gate,
) -> StreamRecord:
    """Answer ``handler``'s request with ``events`` as an SSE stream following ``plan``."""
    handler.protocol_version = "HTTP/1.1"  # chunked framing makes a cut body detectable
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Transfer-Encoding", "chunked")
    if not keep_alive:
        handler.send_header("Connection", "close")
    for name, value in headers.items():
        handler.send_header(name, value)
    sent_at: list[float] = []

    def record(outcome: StreamOutcome) -> StreamRecord:
        if outcome != "complete":
            handler.close_connection = True
        return StreamRecord(len(events), tuple(sent_at), outcome)

    try:
        handler.end_headers()
        fault_at = min(plan.fault.after, len(events)) if plan.fault is not None else None
        for i in range(len(events) + 1):
            if i == len(events) and i not in (fault_at, plan.hold_after):
                break
            if stopping.is_set() or (i > 0 and interval > 0 and stopping.wait(interval)):
                return record("stopped")
            if i == plan.hold_after:
                gate.hold(stopping)
                if stopping.is_set():
                    return record("stopped")
            if i == fault_at:
                assert plan.fault is not None
                return record(_fail(handler, plan.fault.how, error_event))
            if i < len(events):
                _write_event(handler, events[i].encode(), split=plan.split_writes)
                sent_at.append(time.monotonic())
        handler.wfile.write(b"0\r\n\r\n")
    except OSError:  # the client closed its end
        return record("client_closed")
    return record("complete")


def _fail(handler: BaseHTTPRequestHandler, how: FaultKind, error_event: SSEEvent) -> StreamOutcome:
    if how == "error":
        _write_event(handler, error_event.encode(), split=False)
        handler.wfile.write(b"0\r\n\r\n")
    elif how == "reset":  # the server's shutdown_request skips the FIN for such sockets
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return how


def _write_event(handler: BaseHTTPRequestHandler, data: bytes, *, split: bool) -> None:
    if not split:
        _write_chunk(handler, data)
        return
    lead = next((i for i, b in enumerate(data) if b >= 0xC0), None)  # a multi-byte start
    cut = lead + 1 if lead is not None else len(data) // 2
    _write_chunk(handler, data[:cut])
    time.sleep(SPLIT_PAUSE)
    _write_chunk(handler, data[cut:])


def _write_chunk(handler: BaseHTTPRequestHandler, data: bytes) -> None:
    handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
