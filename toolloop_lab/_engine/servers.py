"""The MCP servers of one run: whose each tool is, and what each said while the run went on.

A run whose tools came from MCP servers (``mcp_tools``) names the server of each call
(``tool_start`` and ``tool_dispatch`` carry it) and keeps every line of a server's log
that arrived while it ran: the lines of a call's span come just before its
``tool_dispatch`` (the dispatcher reads them, see
:func:`~toolloop_lab._tools.dispatcher.hooks_told`), the rest, between calls, just before
the run's last event (:meth:`RunServers.between_calls`). Each line is sent once per run
and numbered as in its server's log, so a view puts a server's log back together from
the batches in order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from toolloop_lab._tools.servers import (
    BATCH_LINES,
    LogSlice,
    ServerIdentity,
    ServerSite,
    identity_of,
    site_of,
)


@dataclass(slots=True)
class _Watched:
    """One live server of the run: where the run began reading its log, and the spans of
    lines already sent."""

    site: ServerSite
    start: int
    sent: list[tuple[int, int]] = field(default_factory=list)


@dataclass(slots=True)
class RunServers:
    """The MCP servers a run's tools came from (none for a run without MCP tools)."""

    by_tool: dict[str, ServerIdentity] = field(default_factory=dict)
    """Each MCP tool's server, by tool name."""
    _watched: dict[str, _Watched] = field(default_factory=dict)
    """The live servers, by site key."""
    _site_of_tool: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, tools: Mapping[str, object]) -> RunServers:
        """The servers of ``tools`` (by name, as a ``ToolBox`` holds them), each live one's
        log read from now on (the first run of a server: from its first line)."""
        servers = cls()
        for name, tool in tools.items():
            metadata = getattr(tool, "metadata", None)
            identity = identity_of(metadata)
            if identity is None:
                continue
            servers.by_tool[name] = identity
            site = site_of(metadata)
            if site is None:
                continue
            servers._site_of_tool[name] = site.key
            if site.key not in servers._watched:
                servers._watched[site.key] = _Watched(site, site.run_mark())
        return servers

    def server(self, tool: str) -> str | None:
        """The name of the server tool ``tool`` came from, or ``None``."""
        identity = self.by_tool.get(tool)
        return None if identity is None else identity.name

    def site(self, tool: str) -> ServerSite | None:
        """The live server tool ``tool`` came from, or ``None``."""
        key = self._site_of_tool.get(tool)
        watched = None if key is None else self._watched.get(key)
        return None if watched is None else watched.site

    def sent(self, tool: str, said: LogSlice) -> None:
        """The lines ``said`` of tool ``tool``'s server went out beside one of its calls."""
        key = self._site_of_tool.get(tool)
        watched = None if key is None else self._watched.get(key)
        if watched is not None:
            watched.sent.append(said.span)

    def between_calls(self) -> Iterator[tuple[str, LogSlice]]:
        """Lines each live server logged since the run began that no call's batch sent,
        as consecutive slices (each server's newest :data:`BATCH_LINES` of them, older
        ones counted as dropped); each is then counted as sent."""
        for watched in self._watched.values():
            gaps = _gaps(watched.start + 1, watched.site.log.count, watched.sent)
            budget = BATCH_LINES
            kept: list[LogSlice] = []
            for first, last in reversed(gaps):  # the newest first, while the bound allows
                if budget <= 0:
                    break
                said = watched.site.log.between(first, last, limit=budget)
                watched.sent.append((first, last))
                if said is not None:
                    budget -= len(said.lines)
                    kept.append(said)
            for said in reversed(kept):  # in the log's order
                yield watched.site.name, said


def _gaps(first: int, last: int, sent: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans of ``first..last`` that no span in ``sent`` covers, in order."""
    gaps: list[tuple[int, int]] = []
    at = first
    for lo, hi in sorted(sent):
        if hi < at:
            continue
        if lo > at:
            gaps.append((at, min(lo - 1, last)))
        at = max(at, hi + 1)
        if at > last:
            break
    if at <= last:
        gaps.append((at, last))
    return [(lo, hi) for lo, hi in gaps if lo <= hi]
