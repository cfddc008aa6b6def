"""Which server a tool came from, and what that server said: what the loop knows of MCP.

A tool loaded from an MCP server (:mod:`toolloop_lab._mcp`) carries its server in its
LangChain ``metadata``, as plain JSON (``{"mcp_server": {"name", "transport", "site"}}``):
LangChain passes a tool's metadata to every callback, so a LangChain agent's run seen
through the bridge knows it too, and a tool copied or pickled keeps it. The ``site`` key
names the live :class:`ServerSite` in this process (found with :func:`site_of`), which
holds the server's log: its stderr, line by line, numbered from 1, bounded. A tool whose
site is gone (its ``mcp_tools`` block ended, or it was pickled to another process) still
reads as its server's (:func:`identity_of`), with no log.

The loop takes a mark of the log as a call starts and the lines since as it ends
(:meth:`ServerLog.since`): the lines that arrived while the call ran, for its
``server_log`` event. Nothing here imports the ``mcp`` SDK: the loop never does.
"""

from __future__ import annotations

import codecs
import threading
import uuid
import weakref
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolloop_lab._support.escape import scrub
from toolloop_lab.events import McpTransport as Transport

METADATA_KEY: Final = "mcp_server"
"""The key of a tool's ``metadata`` that names its MCP server."""

KEEP_LINES: Final = 2_000
"""Lines a server's log keeps (the newest); older ones are counted, not kept."""
LINE_CHARS: Final = 1_000
"""Characters of one log line kept (then the ``… (N chars)`` cut)."""
BATCH_LINES: Final = 200
"""Lines one ``server_log`` event holds at most (the newest of its span; the rest are
counted as dropped)."""
TAIL_LINES: Final = 20
"""Lines of a server's stderr an error quotes (the newest)."""


@dataclass(frozen=True, slots=True)
class LogSlice:
    """Consecutive lines of a server's log: the span ``[first - dropped, last]`` arrived,
    of which the newest are kept (``lines``, numbered from ``first``)."""

    first: int
    """The number of ``lines[0]`` in the server's log (from 1)."""
    dropped: int
    """Lines of the span before ``first``, left out by the bound."""
    lines: tuple[str, ...]

    @property
    def span(self) -> tuple[int, int]:
        """The numbers of the first and the last line the slice covers."""
        return self.first - self.dropped, self.first + len(self.lines) - 1


class ServerLog:
    """One server's log: what it wrote to its stderr (and the log messages it sent over
    MCP), line by line, numbered from 1, the newest :data:`KEEP_LINES` kept, each clipped
    to :data:`LINE_CHARS`. Written from the thread that reads the server, read from any:
    every access holds a lock."""

    def __init__(self, keep: int = KEEP_LINES) -> None:
        self._lock = threading.Lock()
        self._lines: deque[str] = deque(maxlen=keep)
        self._count = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._partial: list[str] = []
        self._partial_len = 0

    @property
    def count(self) -> int:
        """Lines written so far (the number of the newest)."""
        with self._lock:
            return self._count

    def feed(self, data: bytes) -> None:
        """Bytes the server wrote: complete lines are added, a partial one waits."""
        text = self._decoder.decode(data)
        with self._lock:
            self._take(text)

    def close(self) -> None:
        """The stream ended: a partial last line is a line too."""
        with self._lock:
            self._take(self._decoder.decode(b"", final=True))
            if self._partial_len:
                self._add("".join(self._partial), self._partial_len)
            self._partial, self._partial_len = [], 0

    def note(self, text: str) -> None:
        """A whole message (a log message sent over MCP), one line per line of it."""
        with self._lock:
            for line in text.splitlines() or [""]:
                self._add(line, len(line))

    def _take(self, text: str) -> None:
        pieces = text.split("\n")
        for index, piece in enumerate(pieces):
            kept = sum(len(p) for p in self._partial)
            if kept <= LINE_CHARS:  # past the cut a line's rest is only counted
                self._partial.append(piece[: LINE_CHARS + 1 - kept])
            self._partial_len += len(piece)
            if index < len(pieces) - 1:  # a newline ends it
                self._add("".join(self._partial), self._partial_len)
                self._partial, self._partial_len = [], 0

    def _add(self, line: str, length: int) -> None:
        if line.endswith("\r") and length <= LINE_CHARS + 1:
            line, length = line[:-1], length - 1
        if length > LINE_CHARS:
            line = f"{line[:LINE_CHARS]}… ({length:,} chars)"
        self._count += 1
        self._lines.append(scrub(line))

    def since(self, mark: int, *, limit: int = BATCH_LINES) -> LogSlice | None:
        """The lines after line ``mark`` (what arrived since :attr:`count` read ``mark``),
        the newest ``limit`` of them; ``None`` when none came."""
        with self._lock:
            return self._slice(mark + 1, self._count, limit)

    def between(self, first: int, last: int, *, limit: int = BATCH_LINES) -> LogSlice | None:
        """Lines ``first`` to ``last``, the newest ``limit`` of them (``None``: none)."""
        with self._lock:
            return self._slice(first, min(last, self._count), limit)

    def tail(self, lines: int = TAIL_LINES) -> tuple[str, ...]:
        """The newest ``lines`` lines."""
        with self._lock:
            held = len(self._lines)
            return tuple(self._lines[i] for i in range(max(held - lines, 0), held))

    def _slice(self, first: int, last: int, limit: int) -> LogSlice | None:
        first = max(first, 1)
        if last < first:
            return None
        oldest = self._count - len(self._lines) + 1  # the number of the oldest line kept
        start = max(first, oldest, last - limit + 1)
        lines = tuple(self._lines[n - oldest] for n in range(start, last + 1))
        return LogSlice(start, start - first, lines)


class ServerSite:
    """A live MCP server as the loop sees it: its name and transport, the session it
    serves (its id, once the server gave one), and its log.

    Each run that has the server's tools takes a mark of the log as it starts
    (:meth:`run_mark`): the first run to do so takes the server's whole log, what it
    said while starting included."""

    def __init__(self, name: str, transport: Transport, log: ServerLog | None = None) -> None:
        self.name = name
        self.transport: Transport = transport
        self.log = log if log is not None else ServerLog()
        self.session_id: str | None = None
        self.key = uuid.uuid4().hex
        self._marked = False
        self._lock = threading.Lock()

    def run_mark(self) -> int:
        """Where a run starting now reads the log from (0: from its first line)."""
        with self._lock:
            first, self._marked = not self._marked, True
        return 0 if first else self.log.count

    def metadata(self) -> dict[str, str]:
        """What a tool of this server carries under :data:`METADATA_KEY`."""
        return {"name": self.name, "transport": self.transport, "site": self.key}


_sites: weakref.WeakValueDictionary[str, ServerSite] = weakref.WeakValueDictionary()
_sites_lock = threading.Lock()


def register(site: ServerSite) -> None:
    """Make ``site`` findable from its tools' metadata (while something holds it)."""
    with _sites_lock:
        _sites[site.key] = site


@dataclass(frozen=True, slots=True)
class ServerIdentity:
    """The server a tool came from, as its metadata names it."""

    name: str
    transport: Transport | None


def identity_of(metadata: Mapping[str, Any] | None) -> ServerIdentity | None:
    """The MCP server a tool's (or a callback's) ``metadata`` names, if any."""
    entry = metadata.get(METADATA_KEY) if isinstance(metadata, Mapping) else None
    if not isinstance(entry, Mapping):
        return None
    name, transport = entry.get("name"), entry.get("transport")
    if not isinstance(name, str) or not name:
        return None
    known = transport if transport in ("stdio", "streamable_http") else None
    return ServerIdentity(name, known)


def site_of(metadata: Mapping[str, Any] | None) -> ServerSite | None:
    """The live server a tool's ``metadata`` names, if it is in this process."""
    entry = metadata.get(METADATA_KEY) if isinstance(metadata, Mapping) else None
    key = entry.get("site") if isinstance(entry, Mapping) else None
    if not isinstance(key, str):
        return None
    with _sites_lock:
        return _sites.get(key)
