"""``McpServer``: an MCP server described as plain data, so a scenario can carry it anywhere.

A server is either a command the client starts and talks to over its stdin and stdout
(``stdio``), or a URL it connects to over streamable HTTP. The description holds no live
object (no process, no session, no client): it pickles, so a sweep ships it to a process
pool or a Dask worker, which starts (or connects to) the server there and stops it after
(:func:`~toolloop_lab._mcp.tools.mcp_tools`). Every field is checked where it is written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from toolloop_lab._support.escape import NAME_CHARS, clip
from toolloop_lab._support.fields import TimeoutSeconds, checked, shown
from toolloop_lab._support.pickling import quick_pickle
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import McpTransport

DEFAULT_START_TIMEOUT_S: Final = 30.0
"""How long a server may take to start and answer the MCP handshake by default."""

_NAME_CHARS: Final = 64
"""Characters a server's name may have: it prefixes nothing, but every view shows it."""


@quick_pickle
@dataclass(frozen=True, slots=True)
class McpServer:
    """One MCP server: give ``command`` (and ``args``, ``env``, ``cwd``) to start it over
    stdio, or ``url`` (and ``headers``) to connect to it over streamable HTTP.

    ``name`` tells the server apart in every view, trace and frame (each of its tools
    carries it); ``start_timeout_s`` bounds how long it may take to start and answer the
    handshake. Plain data: it pickles, and nothing starts until ``mcp_tools`` opens it.
    """

    name: str
    command: str | None = None
    """The program to start (``sys.executable``, ``"npx"``, ...)."""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    """Variables added to the few the ``mcp`` SDK passes on (``PATH``, ``HOME``, ...)."""
    cwd: str | None = None
    url: str | None = None
    """The server's streamable HTTP endpoint (``http://127.0.0.1:8000/mcp``)."""
    headers: Mapping[str, str] | None = None
    """HTTP headers sent with every request (an ``Authorization``, say)."""
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigurationError(
                f"name takes the server's name (text), got {shown(self.name)}", field="name"
            )
        if len(self.name) > _NAME_CHARS or any(not c.isprintable() for c in self.name):
            raise ConfigurationError(
                f"name {clip(self.name, NAME_CHARS)!r}: a server's name is at most "
                f"{_NAME_CHARS} printable characters",
                field="name",
            )
        if (self.command is None) == (self.url is None):
            raise ConfigurationError(
                f"server {self.name!r}: give command= (a server started over stdio) or "
                "url= (one reached over streamable HTTP), not both and not neither",
                field="command" if self.command is None else "url",
            )
        if self.command is not None:
            self._check_stdio()
        else:
            self._check_http()
        limit = checked(TimeoutSeconds, self.start_timeout_s, field="start_timeout_s")
        object.__setattr__(self, "start_timeout_s", float(limit))

    def _check_stdio(self) -> None:
        if not isinstance(self.command, str) or not self.command.strip():
            raise ConfigurationError(
                f"server {self.name!r}: command takes the program to start (text), got "
                f"{shown(self.command)}",
                field="command",
            )
        object.__setattr__(self, "args", _texts(self.args, "args", self.name))
        if self.env is not None:
            object.__setattr__(self, "env", _text_map(self.env, "env", self.name))
        if self.cwd is not None:
            if not isinstance(self.cwd, (str, os.PathLike)):
                raise ConfigurationError(
                    f"server {self.name!r}: cwd takes a directory, got {shown(self.cwd)}",
                    field="cwd",
                )
            object.__setattr__(self, "cwd", os.fspath(self.cwd))
        if self.headers is not None:
            raise ConfigurationError(
                f"server {self.name!r}: headers= is for a server reached by url=",
                field="headers",
            )

    def _check_http(self) -> None:
        url = self.url
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigurationError(
                f"server {self.name!r}: url takes the server's http(s) endpoint "
                f"(http://127.0.0.1:8000/mcp), got {shown(url)}",
                field="url",
            )
        if self.headers is not None:
            object.__setattr__(self, "headers", _text_map(self.headers, "headers", self.name))
        for field, value in (("args", self.args), ("env", self.env), ("cwd", self.cwd)):
            if value not in ((), None):
                raise ConfigurationError(
                    f"server {self.name!r}: {field}= is for a server started by command=",
                    field=field,
                )

    @property
    def transport(self) -> McpTransport:
        """``stdio`` for a server started by ``command``, ``streamable_http`` for a URL."""
        return "stdio" if self.command is not None else "streamable_http"

    def describe(self) -> str:
        """The server as its errors name it: ``'inventory' (stdio: python server.py)``."""
        if self.url is not None:
            return f"{self.name!r} (streamable HTTP: {clip(self.url, NAME_CHARS)})"
        line = " ".join([str(self.command), *self.args])
        return f"{self.name!r} (stdio: {clip(line, NAME_CHARS)})"


def _texts(value: Any, field: str, server: str) -> tuple[str, ...]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ConfigurationError(
            f"server {server!r}: {field} takes a list of strings, got {shown(value)}",
            field=field,
        )
    items = tuple(os.fspath(v) if isinstance(v, os.PathLike) else v for v in value)
    wrong = next((v for v in items if not isinstance(v, str)), None)
    if wrong is not None:
        raise ConfigurationError(
            f"server {server!r}: {field} takes strings, got {shown(wrong)}", field=field
        )
    return items


def _text_map(value: Any, field: str, server: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigurationError(
            f"server {server!r}: {field} takes a dict of strings to strings, got {shown(value)}",
            field=field,
        )
    return dict(value)
