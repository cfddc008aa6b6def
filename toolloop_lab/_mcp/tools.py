"""``mcp_tools``: start (or connect to) MCP servers, hand out their tools, stop them after.

The servers' sessions live on an event loop of their own, in a thread the block starts and
joins: a tool call from any loop or thread (``await agent.arun()``, ``agent.run()`` in a
notebook, a LangChain agent, a sweep's workers) is run there (see
:meth:`~toolloop_lab._mcp.link.Link.intercept`), so the block works the same in a script,
a notebook cell or an asyncio app, with ``with`` or ``async with``. Every wait is bounded:
a server's start by its ``start_timeout_s``, the block's end by :data:`CLOSE_TIMEOUT_S`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from langchain_core.tools import BaseTool

from toolloop_lab._mcp.server import McpServer
from toolloop_lab._support.fields import shown
from toolloop_lab.errors import ConfigurationError, McpServerError

if TYPE_CHECKING:
    from toolloop_lab._mcp.link import Link

CLOSE_TIMEOUT_S: Final = 10.0
"""How long the block's end waits for its servers to stop (a stdio server gets two seconds
after its stdin closes, then a SIGTERM, then a SIGKILL) before it leaves them."""
_MARGIN_S: Final = 5.0
"""Time beyond the servers' own start limits the block waits for their start."""


class McpTools:
    """What :func:`mcp_tools` returns: ``with`` (or ``async with``) it to start the servers
    and get their tools; the block's end stops them. It can be opened again after."""

    def __init__(self, servers: Iterable[McpServer]) -> None:
        self.servers: tuple[McpServer, ...] = checked_servers(servers)
        _need_adapter()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._links: list[Link] = []  # the servers' sessions, while the block is open
        self._tasks: list[asyncio.Task[None]] = []
        self._stop: asyncio.Event | None = None

    # -- the two ways in --------------------------------------------------------------------
    def __enter__(self) -> list[BaseTool]:
        future = self._launch()
        try:
            return future.result(timeout=self._start_bound())
        except concurrent.futures.TimeoutError:
            future.cancel()
            self._close()
            raise self._too_slow() from None
        except BaseException:
            future.cancel()
            self._close()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._close()

    async def __aenter__(self) -> list[BaseTool]:
        future = self._launch()
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self._start_bound())
        except TimeoutError:
            await asyncio.to_thread(self._close)
            raise self._too_slow() from None
        except BaseException:
            future.cancel()
            await asyncio.shield(asyncio.to_thread(self._close))
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.shield(asyncio.to_thread(self._close))

    @property
    def tools(self) -> list[BaseTool]:
        """The open servers' tools, in the order the servers were given (none when shut)."""
        return [tool for link in self._links for tool in link.tools]

    # -- the servers' thread ----------------------------------------------------------------
    def _launch(self) -> concurrent.futures.Future[list[BaseTool]]:
        if self._thread is not None:
            raise RuntimeError(
                "this mcp_tools block is open already: leave it first, or call "
                "mcp_tools(servers) again for servers of their own"
            )
        loop = asyncio.new_event_loop()
        names = ", ".join(s.name for s in self.servers) or "none"
        thread = threading.Thread(
            target=_serve, args=(loop,), name=f"toolloop_lab MCP servers ({names})", daemon=True
        )
        self._loop, self._thread = loop, thread
        thread.start()
        return asyncio.run_coroutine_threadsafe(self._start(), loop)

    async def _start(self) -> list[BaseTool]:
        from toolloop_lab._mcp.link import Link  # the mcp SDK, once a block opens

        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._links = [Link(server, loop) for server in self.servers]
        readies: list[asyncio.Future[None]] = [loop.create_future() for _ in self._links]
        self._tasks = [
            loop.create_task(link.run(ready, self._stop), name=f"MCP server {link.server.name}")
            for link, ready in zip(self._links, readies, strict=True)
        ]
        results = await asyncio.gather(*readies, return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            await self._shutdown()
            raise _first_failure(failed)
        return self.tools

    async def _shutdown(self) -> None:
        for link in self._links:
            link.shut = True
        if self._stop is not None:
            self._stop.set()
        if not self._tasks:
            return
        _, pending = await asyncio.wait(self._tasks, timeout=CLOSE_TIMEOUT_S)
        for task in pending:  # a server that would not stop: left, its task cancelled
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=1.0)

    def _close(self) -> None:
        """Stop the servers and the thread (bounded), wherever the block is left from."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        for link in self._links:
            link.shut = True
        try:
            if not loop.is_closed():
                stopping = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
                try:
                    stopping.result(timeout=CLOSE_TIMEOUT_S + 2.0)
                except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                    stopping.cancel()
                loop.call_soon_threadsafe(loop.stop)
        except RuntimeError:  # the loop closed meanwhile
            pass
        thread.join(timeout=CLOSE_TIMEOUT_S)
        self._loop = self._thread = None
        self._tasks, self._stop = [], None

    def _start_bound(self) -> float:
        slowest = max((s.start_timeout_s for s in self.servers), default=0.0)
        return slowest + _MARGIN_S

    def _too_slow(self) -> McpServerError:
        names = ", ".join(repr(s.name) for s in self.servers)
        return McpServerError(
            f"MCP servers {names} could not start: they were not all ready within "
            f"{self._start_bound():g} s",
            reason="server_start",
            server=self.servers[0].name if self.servers else "",
            transport=self.servers[0].transport if self.servers else "",
        )


def mcp_tools(servers: Iterable[McpServer]) -> McpTools:
    """The tools of MCP ``servers``, for a ``with`` (or ``async with``) block: entering it
    starts each stdio server (connects to each URL), answers the MCP handshake and loads
    its tools through ``langchain-mcp-adapters``; leaving it stops them.

    ::

        with mcp_tools([McpServer("inventory", command=sys.executable,
                                  args=["inventory_server.py"])]) as tools:
            agent = LLMAgent(model, tools, observers=[dbg])
            agent.run("How many widgets are left?")

    The tools are LangChain tools (``LLMAgent``, ``create_agent`` and every framework take
    them), each keeping its server: its ``tool_start`` and ``tool_dispatch`` events name
    it, and the lines its server writes to its stderr while a call runs come just before
    that call's result (``server_log`` events). A server that cannot start raises
    :class:`~toolloop_lab.errors.McpServerError` (reason ``server_start``) naming it,
    why, and the last lines of its stderr, before any model call; one that exits, loses
    its connection or closes its session later ends each call waiting on it with an
    error result in words: a run never hangs on a dead server. ``servers`` have unique
    names; every wait is bounded.
    """
    return McpTools(servers)


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """The servers' thread: run their loop until the block ends, then close it."""
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.wait(left, timeout=1.0))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def checked_servers(servers: Any, *, field: str = "servers") -> tuple[McpServer, ...]:
    """``servers`` as a tuple of :class:`McpServer`, each named once; else the fix."""
    if isinstance(servers, (McpServer, str, bytes, Mapping)) or not isinstance(servers, Iterable):
        raise ConfigurationError(
            f"{field} takes a list of McpServer values, got {shown(servers)}", field=field
        )
    given: Sequence[Any] = tuple(servers)
    seen: set[str] = set()
    for index, server in enumerate(given):
        if not isinstance(server, McpServer):
            raise ConfigurationError(
                f"{field}[{index}] is {shown(server)}: give McpServer(name, command=...) or "
                "McpServer(name, url=...)",
                field=field,
            )
        if server.name in seen:
            raise ConfigurationError(
                f"two servers are named {server.name!r}: every view tells servers apart by "
                "name, so give each its own",
                field=field,
            )
        seen.add(server.name)
    return tuple(given)


def _first_failure(failed: list[BaseException]) -> BaseException:
    """The first server's failure (the others named in its message, if any)."""
    first = failed[0]
    others = [f for f in failed[1:] if isinstance(f, McpServerError)]
    if not isinstance(first, McpServerError) or not others:
        return first
    names = ", ".join(repr(f.server) for f in others)
    message = f"{first} (and {len(others)} more could not start: {names})"
    return McpServerError(
        message,
        reason=first.reason,
        server=first.server,
        transport=first.transport,
        stderr=first.stderr,
    )


def _need_adapter() -> None:
    """``langchain-mcp-adapters`` (and the ``mcp`` SDK it brings) are there, or the fix."""
    try:
        import langchain_mcp_adapters  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "MCP servers' tools need langchain-mcp-adapters: pip install 'toolloop-lab[mcp]'"
        ) from exc
