"""One MCP server's session, and everything that can go wrong with it, said in words.

A :class:`Link` lives on the event loop of its ``mcp_tools`` block (:mod:`.tools`): a
supervising task opens the transport, the ``mcp`` SDK's ``ClientSession`` and its
handshake, loads the server's tools through ``langchain-mcp-adapters``'
:func:`~langchain_mcp_adapters.tools.load_mcp_tools`, then holds the session open until
the block ends or the server is gone. Over stdio the server is started with the SDK's
``stdio_client`` (what the adapter's stdio connection calls) given a pipe as its
``errlog``, read here line by line into the server's log; over streamable HTTP the
adapter's ``create_session`` opens the session with an ``httpx`` client whose transport
watches every response, so a connection that breaks mid-call is known at once.

Every call of the server's tools passes :meth:`Link.intercept`, the adapter's documented
tool-call interceptor: it runs the call on the block's loop, whatever loop or thread the
tool was called from (``agent.run()`` in a notebook runs on another), and races it against
the server's end. A crashed process, a lost connection, a session closed under the call
each end the call at once with a :class:`~toolloop_lab.errors.McpServerError` naming the
server and the cause (the last lines of its stderr too): never a hang, never "timed out",
never an empty reason. A stop of the run cancels the call's task there too.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import anyio
import httpx
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_mcp_adapters.callbacks import CallbackContext, Callbacks
from langchain_mcp_adapters.interceptors import MCPToolCallRequest
from langchain_mcp_adapters.sessions import StreamableHttpConnection, create_session
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError
from mcp.types import CONNECTION_CLOSED, LoggingMessageNotificationParams

from toolloop_lab._mcp.server import McpServer
from toolloop_lab._support.errortext import explain, unwrap
from toolloop_lab._support.jsonsafe import dumps
from toolloop_lab._tools.servers import METADATA_KEY, TAIL_LINES, ServerSite, register
from toolloop_lab.errors import McpServerError

EXIT_GRACE_S: Final = 1.0
"""How long a call whose stdio server closed its pipe waits for the process's stderr to
end too, so the lines it wrote as it died are in the words of the error."""

CALL_TAIL_LINES: Final = 5
"""Lines of its server's stderr a call's error result quotes (the model reads it)."""

_READ_BYTES: Final = 65_536

Handler = Callable[[MCPToolCallRequest], Awaitable[Any]]


class Link:
    """One server: its session on the block's loop, its log, and why it ended."""

    def __init__(self, server: McpServer, loop: asyncio.AbstractEventLoop) -> None:
        self.server = server
        self.loop = loop
        self.site = ServerSite(server.name, server.transport)
        register(self.site)
        self.tools: list[BaseTool] = []
        self.failure: McpServerError | None = None
        """Why the session ended, once it did (the block's end included)."""
        self._gone = asyncio.Event()
        """Set on the block's loop the moment the server is known to be gone."""
        self._stderr_done = asyncio.Event()
        self._stderr_fd: int | None = None
        self._closing = False
        self._exited = False
        self.shut = False
        """Set (from any thread) once the block is ending: no call starts any more."""

    # -- the session's life: on the block's loop -----------------------------------------
    async def run(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        """Open the session, load the tools, set ``ready``, hold it until ``stop`` or the
        server's end; a failure to start goes to ``ready`` instead."""
        try:
            async with self._session() as session:
                with anyio.fail_after(self.server.start_timeout_s):
                    await session.initialize()
                    self.tools = await self._load(session)
                ready.set_result(None)
                await _first(stop.wait(), self._gone.wait())
                self._closing = True
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(await self._start_failure(exc))
            elif not self._closing:
                self._lost(exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            self._closing = True
            if self.failure is None:
                self.failure = self._error(
                    "session_closed",
                    f"the session with MCP server {self.server.describe()} is closed: the "
                    "mcp_tools block that opened it has ended",
                )
            self._gone.set()

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[ClientSession]:
        """The transport and the ``ClientSession`` over it (not yet initialized)."""
        callbacks = Callbacks(on_logging_message=self._on_log).to_mcp_format(
            context=CallbackContext(server_name=self.server.name)
        )
        if self.server.transport == "streamable_http":
            connection: StreamableHttpConnection = {
                "transport": "streamable_http",
                "url": str(self.server.url),
                "headers": dict(self.server.headers or {}),
                "httpx_client_factory": self._http_client,
            }
            async with create_session(connection, mcp_callbacks=callbacks) as session:
                yield session
            return
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        errlog = open(write_fd, "w", encoding="utf-8")  # noqa: SIM115 - closed once the child has it
        params = StdioServerParameters(
            command=str(self.server.command),
            args=list(self.server.args),
            env=dict(self.server.env) if self.server.env is not None else None,
            cwd=self.server.cwd,
        )
        watched = False
        try:
            async with stdio_client(params, errlog=errlog) as (read, write):
                errlog.close()  # the child holds its copy: its exit ends the pipe
                self._watch_stderr(read_fd)
                watched = True
                async with ClientSession(
                    read, write, logging_callback=callbacks.logging_callback
                ) as session:
                    yield session
        finally:
            errlog.close()
            if watched:
                self._unwatch_stderr(read_fd)
            else:  # it never started: nothing wrote to the pipe
                os.close(read_fd)
                self._stderr_done.set()

    async def _load(self, session: ClientSession) -> list[BaseTool]:
        """The server's tools, each keeping its server (metadata) and ending a failure of
        the server in words (see :func:`_said_failures`)."""
        tools = await load_mcp_tools(
            session, server_name=self.server.name, tool_interceptors=[self.intercept]
        )
        return [_identified(tool, self.site) for tool in tools]

    # -- a call: from any loop, run on the block's ----------------------------------------
    async def intercept(self, request: MCPToolCallRequest, handler: Handler) -> Any:
        """The adapter's tool-call interceptor: run the call on the block's loop, where
        the session lives, however the tool was called."""
        if asyncio.get_running_loop() is self.loop:
            return await self._call(request, handler)
        if self.shut:
            raise self._closed_error()
        try:
            future = asyncio.run_coroutine_threadsafe(self._call(request, handler), self.loop)
        except RuntimeError:  # the block's loop is closed: the block has ended
            raise self._closed_error() from None
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self.shut and future.cancelled() and (task is None or not task.cancelling()):
                raise self._closed_error() from None  # the block ended before it ran
            raise

    async def _call(self, request: MCPToolCallRequest, handler: Handler) -> Any:
        if self._gone.is_set():
            raise self._closed_error()
        call = asyncio.ensure_future(handler(request))
        gone = asyncio.ensure_future(self._gone.wait())
        try:
            await asyncio.wait({call, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:  # a stop of the run cancels this task: the call goes with it
            gone.cancel()
            if not call.done():
                call.cancel()
        if not call.done() or call.cancelled():
            with contextlib.suppress(BaseException):
                await call
            raise await self._failure_during_call()
        error = call.exception()
        if error is None:
            self._drain_stderr()  # what it wrote before answering sits beside the call
            return call.result()
        if _session_broke(error):
            failure = await self._failure_during_call()
            self._lost(error)  # no later call waits on it: each is refused at once
            raise failure from None
        raise error

    # -- what went wrong, in words ---------------------------------------------------------
    async def _failure_during_call(self) -> McpServerError:
        """The error of a call the server's end cut short."""
        if self.server.transport == "stdio":
            await self._stderr_ended()
            if self._exited or self._stderr_done.is_set():
                return self._error(
                    "server_exited",
                    f"MCP server {self.server.describe()} exited while this call ran",
                    stderr=True,
                )
        if self.failure is not None and self.failure.reason == "connection_lost":
            return self._error(
                "connection_lost",
                f"lost the connection to MCP server {self.server.describe()} while this "
                f"call ran: {self._cause}",
            )
        if self.failure is not None and self.failure.reason == "session_closed":
            return self.failure
        return self._error(
            "session_closed",
            f"MCP server {self.server.describe()} closed the session while this call ran",
            stderr=True,
        )

    def _closed_error(self) -> McpServerError:
        """The error of a call made after the session ended."""
        failure = self.failure
        if failure is None or failure.reason == "session_closed":
            return failure or self._error(
                "session_closed",
                f"the session with MCP server {self.server.describe()} is closed",
            )
        earlier = {
            "server_exited": "the server exited earlier",
            "connection_lost": f"its connection was lost earlier ({self._cause})",
        }.get(failure.reason, "it ended earlier")
        return self._error(
            "session_closed",
            f"the session with MCP server {self.server.describe()} is closed: {earlier}",
            stderr=True,
        )

    async def _start_failure(self, exc: BaseException) -> McpServerError:
        """Why the server could not start, with what it wrote to its stderr."""
        cause = unwrap(exc)
        await self._stderr_ended()
        if isinstance(cause, TimeoutError):
            why = f"it did not answer the MCP handshake within {self.server.start_timeout_s:g} s"
        elif _session_broke(cause) and self.server.transport == "stdio":
            why = "it exited before it answered the MCP handshake"
        elif isinstance(cause, (asyncio.CancelledError, KeyboardInterrupt)):
            why = "its start was stopped"
        else:
            why = explain(cause)
        return self._error(
            "server_start",
            f"MCP server {self.server.describe()} could not start: {why}",
            stderr=True,
        )

    def _lost(self, exc: BaseException) -> None:
        """The server is gone (its process ended, its connection broke): every call
        waiting on it ends now, and every later one is refused."""
        if self._closing or self.failure is not None:
            return
        if self.server.transport == "stdio":
            self.failure = self._error(
                "server_exited", f"MCP server {self.server.describe()} exited", stderr=True
            )
        else:
            self._cause = explain(exc)
            self.failure = self._error(
                "connection_lost",
                f"lost the connection to MCP server {self.server.describe()}: {self._cause}",
            )
        self._gone.set()

    _cause: str = "the connection ended"

    def _error(self, reason: str, text: str, *, stderr: bool = False) -> McpServerError:
        """The error, quoting the newest lines of the server's stderr when ``stderr``: a
        few for a call's result (the model reads it; the call's ``server_log`` has them
        all), more for a start that failed (a traceback's end)."""
        lines = TAIL_LINES if reason == "server_start" else CALL_TAIL_LINES
        tail = self.site.log.tail(lines) if stderr else ()
        if tail:
            text += "; the last lines of its stderr:\n" + "\n".join(f"  {line}" for line in tail)
        elif stderr and self.server.transport == "stdio":
            text += " (it wrote nothing to its stderr)"
        return McpServerError(
            text,
            reason=reason,
            server=self.server.name,
            transport=self.server.transport,
            stderr=tail,
        )

    # -- the server's voice ----------------------------------------------------------------
    async def _on_log(
        self, params: LoggingMessageNotificationParams, context: CallbackContext
    ) -> None:
        """A log message the server sent over MCP: a line of its log too."""
        data = params.data if isinstance(params.data, str) else dumps(params.data)
        self.site.log.note(f"[{params.level}] {data}")

    def _watch_stderr(self, fd: int) -> None:
        self._stderr_fd = fd
        self.loop.add_reader(fd, self._drain_stderr)

    def _drain_stderr(self) -> None:
        """Read what the server wrote to its stderr so far (never blocks)."""
        fd = self._stderr_fd
        while fd is not None:
            try:
                data = os.read(fd, _READ_BYTES)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if data:
                self.site.log.feed(data)
                continue
            self._stderr_closed()
            return

    def _stderr_closed(self) -> None:
        """The pipe ended: the process exited (or closed its stderr)."""
        fd, self._stderr_fd = self._stderr_fd, None
        if fd is not None:
            self.loop.remove_reader(fd)
            os.close(fd)
        self.site.log.close()
        self._stderr_done.set()
        if not self._closing:
            self._exited = True
            self._lost(EOFError())

    def _unwatch_stderr(self, fd: int) -> None:
        if self._stderr_fd == fd:
            self._drain_stderr()
        if self._stderr_fd == fd:  # the child may still be alive (a failed handshake)
            self._stderr_fd = None
            self.loop.remove_reader(fd)
            os.close(fd)
            self.site.log.close()
            self._stderr_done.set()

    async def _stderr_ended(self) -> None:
        """Give a dying process a moment to finish writing its stderr."""
        if self.server.transport != "stdio" or self._stderr_done.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stderr_done.wait(), EXIT_GRACE_S)

    # -- HTTP: a transport that notices a broken connection --------------------------------
    def _http_client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx.Timeout | None = None,
        auth: httpx.Auth | None = None,
    ) -> httpx.AsyncClient:
        """The ``httpx`` client the adapter's session uses (its ``httpx_client_factory``),
        as the SDK's own but for the transport, which watches the connection."""
        return httpx.AsyncClient(
            headers=headers, timeout=timeout, auth=auth, transport=_Watched(self)
        )

    def _http_failed(self, request: httpx.Request, exc: BaseException) -> None:
        # a GET stream (the server's own messages) idle for the read timeout is no loss
        if request.method == "GET" and isinstance(exc, httpx.ReadTimeout):
            return
        self._lost(exc)


class _Watched(httpx.AsyncBaseTransport):
    """``httpx``'s own transport, telling the link of every request or response stream
    that breaks (the ``mcp`` SDK logs such an error and waits for a reply that never
    comes) and of the session id the server gives."""

    def __init__(self, link: Link) -> None:
        self._link = link
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.TransportError as exc:
            self._link._http_failed(request, exc)
            raise
        session = response.headers.get("mcp-session-id")
        if session:
            self._link.site.session_id = session
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_WatchedStream(response.stream, self._link, request),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _WatchedStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any, link: Link, request: httpx.Request) -> None:
        self._inner = inner
        self._link = link
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx.TransportError as exc:
            self._link._http_failed(self._request, exc)
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


# -- the tools ---------------------------------------------------------------------------
class _ServerFailed(ToolException):
    """A tool's call ended because its server failed: a ``ToolException`` (LangChain
    answers the call with an error ``ToolMessage``, in the server error's words), whose
    cause is the :class:`~toolloop_lab.errors.McpServerError` (our loop reads its reason)."""


def _identified(tool: BaseTool, site: ServerSite) -> BaseTool:
    """The adapter's tool, carrying its server in its metadata, and answering a failure
    of the server with an error result in words wherever it runs."""
    if not isinstance(tool, StructuredTool) or tool.coroutine is None:
        return tool
    metadata = {**(tool.metadata or {}), METADATA_KEY: site.metadata()}
    return tool.model_copy(
        update={
            "metadata": metadata,
            "coroutine": _said_failures(tool.coroutine),
            "handle_tool_error": _handler(tool.handle_tool_error),
        }
    )


def _said_failures(coroutine: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(coroutine)  # the signature stays: langchain-core reads it
    async def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return await coroutine(*args, **kwargs)
        except McpServerError as exc:
            raise _ServerFailed(str(exc)) from exc

    return call


def _handler(given: Any) -> Callable[[ToolException], Any]:
    """The tool's error handler: a server's failure in its own words, anything else as
    the adapter's handler (or LangChain's default) says it."""

    def handle(error: ToolException) -> Any:
        if isinstance(error, _ServerFailed):
            return str(error)
        if callable(given):
            return given(error)
        if isinstance(given, str):
            return given
        raise error

    return handle


def _session_broke(error: BaseException) -> bool:
    """``error`` says the session's streams ended under a call (not a tool's failure)."""
    error = unwrap(error)
    if isinstance(error, McpError):
        return error.error.code == CONNECTION_CLOSED
    return isinstance(
        error, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
    )


async def _first(*waits: Awaitable[Any]) -> None:
    """Wait until the first of ``waits`` is done; cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
